// Package migrations holds the deals schema's migration set (tern format),
// embedded so the binary migrates its own schema at start-up.
package migrations

import "embed"

// FS holds the tern migrations at its root.
//
//go:embed *.sql
var FS embed.FS
