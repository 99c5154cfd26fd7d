package store

import (
	"context"
	"io/fs"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/contacts/migrations"
)

// Schema is the contacts context's PostgreSQL schema.
const Schema = "contacts"

// MigrationSets lists every migration set Migrate applies, for testdb's
// template fingerprint.
var MigrationSets = []fs.FS{migrations.FS, activity.Migrations, outbox.Migrations, directory.Migrations, idempotency.Migrations, customfield.Migrations,
	history.Migrations}

// Migrate applies the contacts schema and the shared components it uses
// (notes and tasks, outbox, users read model, idempotency keys, custom
// field definitions, record history). Custom fields come first: the
// contact list's count cube (migration 009) keys contacts by their enum
// values, which it reads through the definitions; history too, as
// migration 011 and the notes' and tasks' migrations track their tables.
func Migrate(ctx context.Context, d *db.DB) error {
	for _, m := range []func(context.Context, *db.DB) error{customfield.Migrate, history.Migrate} {
		if err := m(ctx, d); err != nil {
			return err
		}
	}
	if err := db.Migrate(ctx, d, "contacts", migrations.FS); err != nil {
		return err
	}
	for _, m := range []func(context.Context, *db.DB) error{activity.Migrate, outbox.Migrate, directory.Migrate, idempotency.Migrate} {
		if err := m(ctx, d); err != nil {
			return err
		}
	}
	return nil
}
