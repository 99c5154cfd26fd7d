package testdb_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/testdb"
)

func newLockDB(t *testing.T) *db.DB {
	t.Helper()
	migrations := fstest.MapFS{"001_t.sql": {Data: []byte("CREATE TABLE t (id int PRIMARY KEY, v int);\n---- create above / drop below ----\nDROP TABLE t;\n")}}
	migrate := func(ctx context.Context, d *db.DB) error { return db.Migrate(ctx, d, "app", migrations) }
	d := testdb.New(t, "tdblocks", migrate, migrations)
	if _, err := d.Exec(context.Background(), "INSERT INTO t VALUES (1, 0)"); err != nil {
		t.Fatal(err)
	}
	return d
}

// A writer queued behind Hold is seen by WaitLockWaiters and by
// WaitBlockedBy, and runs once the lock is released; Hold's release rolls
// its change back, HoldCommit's keeps it.
func TestHoldAndWaits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		hold func(t testing.TB, d *db.DB, sql string, args ...any) func()
		want int // v after the held +10 and the queued +1
	}{
		{"Hold rolls back", testdb.Hold, 1},
		{"HoldCommit commits", testdb.HoldCommit, 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := newLockDB(t)
			ctx := context.Background()
			release := tc.hold(t, d, "UPDATE t SET v = v + 10 WHERE id = $1", 1)
			var holder uint32
			if err := d.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
				WHERE datname = current_database() AND state = 'idle in transaction'`).Scan(&holder); err != nil {
				t.Fatal(err)
			}
			if n := testdb.LockWaiters(t, d); n != 0 {
				t.Fatalf("%d lock waiters before the write", n)
			}
			done := make(chan error, 1)
			go func() {
				_, err := d.Exec(ctx, "UPDATE t SET v = v + 1 WHERE id = 1")
				done <- err
			}()
			testdb.WaitLockWaiters(t, d, 1)
			testdb.WaitBlockedBy(t, d, holder, done)
			release()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			var v int
			if err := d.QueryRow(ctx, "SELECT v FROM t WHERE id = 1").Scan(&v); err != nil {
				t.Fatal(err)
			}
			if v != tc.want {
				t.Fatalf("v = %d, want %d", v, tc.want)
			}
		})
	}
}
