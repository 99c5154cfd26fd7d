// Package migrations holds the contacts schema (contacts and companies).
package migrations

import "embed"

// FS holds the tern migrations at its root.
//
//go:embed *.sql
var FS embed.FS
