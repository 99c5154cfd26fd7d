package store

import (
	"context"
	"io/fs"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/contracts/migrations"
)

// Schema is the contracts context's PostgreSQL schema.
const Schema = "contracts"

// MigrationSets lists every migration set Migrate applies, for testdb's
// template fingerprint.
var MigrationSets = []fs.FS{migrations.FS, history.Migrations, activity.Migrations, outbox.Migrations, directory.Migrations,
	idempotency.Migrations}

// Migrate applies the contracts schema and the shared components it uses:
// record history first (migration 003 tracks contracts and templates, and
// notes and tasks track themselves in it), then the contracts schema,
// notes and tasks, the outbox its events are written to, and the users
// read model that validates task assignees, and the idempotency keys
// each privacy erasure's answer is kept under.
func Migrate(ctx context.Context, d *db.DB) error {
	if err := history.Migrate(ctx, d); err != nil {
		return err
	}
	if err := db.Migrate(ctx, d, Schema, migrations.FS); err != nil {
		return err
	}
	for _, m := range []func(context.Context, *db.DB) error{activity.Migrate, outbox.Migrate, directory.Migrate, idempotency.Migrate} {
		if err := m(ctx, d); err != nil {
			return err
		}
	}
	return nil
}
