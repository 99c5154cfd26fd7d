package store

import (
	"context"
	"io/fs"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/webhooks/migrations"
)

// MigrationSets lists every migration set the service applies, for test
// database fingerprints.
var MigrationSets = []fs.FS{migrations.FS, outbox.Migrations, idempotency.Migrations}

// Migrate applies every migration set the service uses, in order: the
// webhooks schema; the outbox, which carries the audit entries of
// subscription changes (crm:audit) to identity (webhooks publishes no
// events); the idempotency keys, where a privacy erasure's part is stored
// once per erasure.
func Migrate(ctx context.Context, d *db.DB) error {
	for _, m := range []func(context.Context, *db.DB) error{
		func(ctx context.Context, d *db.DB) error { return db.Migrate(ctx, d, "webhooks", migrations.FS) },
		outbox.Migrate, idempotency.Migrate,
	} {
		if err := m(ctx, d); err != nil {
			return err
		}
	}
	return nil
}
