// Package migrations holds the contracts schema migrations.
package migrations

import "embed"

// FS holds the tern migrations at its root.
//
//go:embed *.sql
var FS embed.FS
