package store

import (
	"context"
	"io/fs"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/services/intake/migrations"
)

// Schema is the intake context's PostgreSQL schema.
const Schema = "intake"

// MigrationSets lists every migration set Migrate applies, for testdb's
// template fingerprint.
var MigrationSets = []fs.FS{migrations.FS, idempotency.Migrations}

// Migrate applies the intake schema and the idempotency keys each privacy
// erasure's answer is kept under (the submission route keeps its own,
// scoped to the API key, in idempotency_requests). The binary and the
// test databases share it.
func Migrate(ctx context.Context, d *db.DB) error {
	if err := db.Migrate(ctx, d, Schema, migrations.FS); err != nil {
		return err
	}
	return idempotency.Migrate(ctx, d)
}
