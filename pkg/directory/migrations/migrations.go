// Package migrations holds the user directory read model's migration set.
package migrations

import "embed"

// FS holds the tern migrations at its root.
//
//go:embed *.sql
var FS embed.FS
