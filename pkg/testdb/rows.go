package testdb

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
)

// Column runs sql and returns its one column of every row, failing t on
// any error: a test's read of catalog entries, ids or rows as JSON text.
func Column[T any](t testing.TB, q db.Querier, sql string, args ...any) []T {
	t.Helper()
	rows, err := q.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, sql)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[T])
	if err != nil {
		t.Fatalf("%v\n%s", err, sql)
	}
	return out
}
