package store

import (
	"context"
	"io/fs"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/services/mail/migrations"
)

// MigrationSets lists every migration set the service applies, for test
// database fingerprints.
var MigrationSets = []fs.FS{idempotency.Migrations, migrations.FS}

// Migrate applies every migration set the service uses, in order: the
// idempotency keys (a privacy erasure's part is stored there, run once per
// erasure), then the mail schema.
func Migrate(ctx context.Context, d *db.DB) error {
	if err := idempotency.Migrate(ctx, d); err != nil {
		return err
	}
	return db.Migrate(ctx, d, "mail", migrations.FS)
}
