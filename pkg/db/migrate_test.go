package db_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/testdb"
)

// TestMigrateUnderANewerSchema is a rollback, or a replica of the previous
// release restarting during a rolling deploy: the schema carries a later
// release's migrations. The previous release's migration set starts
// without touching them (expand/contract: its code runs on the expanded
// schema); the later set then finds nothing to do.
func TestMigrateUnderANewerSchema(t *testing.T) {
	t.Parallel()
	previous := fstest.MapFS{
		"001_t.sql": {Data: []byte("CREATE TABLE t (id int);\n---- create above / drop below ----\nDROP TABLE t;\n")},
	}
	current := fstest.MapFS{
		"001_t.sql": previous["001_t.sql"],
		"002_u.sql": {Data: []byte("ALTER TABLE t ADD COLUMN u text NOT NULL DEFAULT 'x';\n---- create above / drop below ----\nALTER TABLE t DROP COLUMN u;\n")},
	}
	migrateWith := func(fsys fstest.MapFS) testdb.MigrateFunc {
		return func(ctx context.Context, d *db.DB) error { return db.Migrate(ctx, d, "app", fsys) }
	}
	d := testdb.New(t, "dbmigrate", migrateWith(current), current)
	ctx := context.Background()
	if _, err := d.Exec(ctx, "INSERT INTO t (id, u) VALUES (1, 'later')"); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name string
		fsys fstest.MapFS
	}{{"previous release", previous}, {"current release again", current}} {
		if err := db.Migrate(ctx, d, "app", step.fsys); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		var version int
		if err := d.QueryRow(ctx, "SELECT version FROM dbmigrate.app_schema_version").Scan(&version); err != nil {
			t.Fatal(err)
		}
		var id int
		var u string
		if err := d.QueryRow(ctx, "SELECT id, u FROM t").Scan(&id, &u); err != nil {
			t.Fatalf("%s: the later release's column or row is gone: %v", step.name, err)
		}
		if diff := cmp.Diff([]any{2, 1, "later"}, []any{version, id, u}); diff != "" {
			t.Errorf("%s: version, row (-want +got):\n%s", step.name, diff)
		}
	}
}
