package testdb

import (
	"context"
	"io/fs"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
)

// rollbackMarker separates a migration's up part from its down part (the
// migration runner's convention).
const rollbackMarker = "---- create above / drop below ----"

// Sections returns the up and down parts of the migration name in fsys,
// for a test that replays a migration over rows written as an older
// release wrote them, or a benchmark that compares a schema with and
// without it. A migration without a down part fails the test.
func Sections(t testing.TB, fsys fs.FS, name string) (up, down string) {
	t.Helper()
	src, err := fs.ReadFile(fsys, name)
	if err != nil {
		t.Fatal(err)
	}
	up, down, ok := strings.Cut(string(src), rollbackMarker)
	if !ok {
		t.Fatalf("migration %s has no rollback section", name)
	}
	return up, down
}

// Apply runs sql (a migration's section, or any statements) in one
// transaction of d, as the migration runner does, failing t with what on
// an error.
func Apply(t testing.TB, d *db.DB, what, sql string) {
	t.Helper()
	ctx := context.Background()
	if err := d.InTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, sql)
		return err
	}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
