package testdb_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/testdb"
)

func TestEachCallGetsItsOwnMigratedDatabase(t *testing.T) {
	t.Parallel()
	migrations := fstest.MapFS{"001_t.sql": {Data: []byte("CREATE TABLE t (id int);\n---- create above / drop below ----\nDROP TABLE t;\n")}}
	migrate := func(ctx context.Context, d *db.DB) error { return db.Migrate(ctx, d, "app", migrations) }
	a := testdb.New(t, "tdbtest", migrate, migrations)
	b := testdb.New(t, "tdbtest", migrate, migrations)
	ctx := context.Background()
	if _, err := a.Exec(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 0 {
		t.Fatalf("second database sees %d rows (%v): databases are shared", n, err)
	}
	var schema string
	if err := a.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil || schema != "tdbtest" {
		t.Fatalf("search_path schema = %q, %v", schema, err)
	}
}

func TestSections(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"001_t.sql": {Data: []byte("CREATE TABLE t (id int);\n---- create above / drop below ----\nDROP TABLE t;\n")}}
	up, down := testdb.Sections(t, fsys, "001_t.sql")
	if diff := cmp.Diff([2]string{"CREATE TABLE t (id int);\n", "\nDROP TABLE t;\n"}, [2]string{up, down}); diff != "" {
		t.Errorf("sections (-want +got):\n%s", diff)
	}
}

func TestColumn(t *testing.T) {
	t.Parallel()
	d := testdb.New(t, "column_test", func(context.Context, *db.DB) error { return nil })
	got := testdb.Column[int64](t, d, `SELECT g FROM generate_series(1, $1::int) g ORDER BY g DESC`, 3)
	if diff := cmp.Diff([]int64{3, 2, 1}, got); diff != "" {
		t.Errorf("Column (-want +got):\n%s", diff)
	}
	if got := testdb.Column[string](t, d, `SELECT 'x' WHERE false`); len(got) != 0 {
		t.Errorf("Column of no rows = %q, want none", got)
	}
}
