// Package migrations embeds the identity schema's migrations (tern format),
// applied at start-up by db.Migrate under an advisory lock.
package migrations

import "embed"

// FS holds the migration files.
//
//go:embed *.sql
var FS embed.FS
