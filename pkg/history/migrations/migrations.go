// Package migrations holds the record history migration set.
package migrations

import "embed"

// FS holds the tern migrations at its root.
//
//go:embed *.sql
var FS embed.FS
