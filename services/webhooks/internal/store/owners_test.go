package store_test

import (
	"context"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/webhooks/migrations"
)

// TestMigrationClearsSecretPrefixes: migration 005 keeps every column the
// previous release reads, leaves rows made before it ownerless-scoped
// (NULL owner_scopes: every type, as before) and without a fingerprint
// (the service computes it), and takes the key material out of their
// secret_prefix.
func TestMigrationClearsSecretPrefixes(t *testing.T) {
	t.Parallel()
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	before := fstest.MapFS{}
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sql") || e.Name() >= "005" {
			continue
		}
		b, err := fs.ReadFile(migrations.FS, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		before[e.Name()] = &fstest.MapFile{Data: b}
		names = append(names, e.Name())
	}
	d := testdb.New(t, "webhooks", func(ctx context.Context, d *db.DB) error {
		for _, n := range names {
			if _, err := d.Exec(ctx, string(before[n].Data)); err != nil {
				return err
			}
		}
		return nil
	}, before)
	ctx := context.Background()
	columns := func() []string {
		var cols []string
		if err := d.QueryRow(ctx, `SELECT array_agg(column_name::text ORDER BY column_name) FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = 'subscriptions'`).Scan(&cols); err != nil {
			t.Fatal(err)
		}
		return cols
	}
	old := columns()
	if _, err := d.Exec(ctx, `INSERT INTO subscriptions (url, events, secret, secret_prefix, created_by) VALUES
		('https://a.example/', '{*}', '\x01', 'whsec_MfKQ9r8G', 7), ('https://b.example/', '{deal.created}', '\x02', 'whsec_', NULL)`); err != nil {
		t.Fatal(err)
	}
	up, err := fs.ReadFile(migrations.FS, "005_subscription_owners.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(ctx, string(up)); err != nil {
		t.Fatal(err)
	}
	now := columns()
	for _, c := range old {
		if !slices.Contains(now, c) {
			t.Errorf("column %s dropped", c)
		}
	}
	type row struct {
		Prefix      string
		Fingerprint *string
		Scopes      []string
		CreatedBy   *int64
	}
	rows, err := d.Query(ctx, `SELECT secret_prefix, secret_fingerprint, owner_scopes, created_by FROM subscriptions ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	seven := int64(7)
	want := []row{{Prefix: "whsec_", CreatedBy: &seven}, {Prefix: "whsec_"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows after the migration (-want +got):\n%s", diff)
	}
}
