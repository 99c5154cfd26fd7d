// Package migrations embeds the webhooks schema's migrations (tern format).
package migrations

import "embed"

// FS holds the migration files, applied with db.Migrate at start-up.
//
//go:embed *.sql
var FS embed.FS
