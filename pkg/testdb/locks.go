package testdb

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/db"
)

// Race tests are made deterministic with PostgreSQL's own locks instead of
// sleeps: the test holds a lock (Hold), starts the competing requests one
// by one, and waits after each until PostgreSQL reports it queued
// (WaitLockWaiters, WaitBlockedBy). Releasing the lock then lets them run in
// the order the race needs.
//
// The waits take the pool, not a db.Querier: PostgreSQL reads
// pg_stat_activity once per transaction, so a poll inside a transaction
// would never see a session start waiting.

const (
	lockWaitTimeout = 15 * time.Second
	lockPoll        = 10 * time.Millisecond
)

// Hold runs sql (say SELECT ... FOR UPDATE or LOCK TABLE) in a transaction
// of its own and keeps it open, with the locks sql took, until release is
// called or the test ends, so a failing test never leaves requests blocked
// behind it. release rolls the transaction back: whatever sql changed is
// discarded. Use HoldCommit when the held change must become visible.
func Hold(t testing.TB, d *db.DB, sql string, args ...any) (release func()) {
	t.Helper()
	release, _ = hold(t, d, false, sql, args...)
	return release
}

// HoldCommit is Hold whose release commits, standing in for a concurrent
// writer whose change the waiting requests must then see; a failed commit
// fails the test.
func HoldCommit(t testing.TB, d *db.DB, sql string, args ...any) (release func()) {
	t.Helper()
	release, _ = hold(t, d, true, sql, args...)
	return release
}

// HoldWriter is HoldCommit that also returns the holding session's backend
// pid, for WaitBlockedBy: the test waits until a request queues behind this
// writer, then commits.
func HoldWriter(t testing.TB, d *db.DB, sql string, args ...any) (commit func(), pid uint32) {
	t.Helper()
	return hold(t, d, true, sql, args...)
}

func hold(t testing.TB, d *db.DB, commit bool, sql string, args ...any) (release func(), pid uint32) {
	t.Helper()
	ctx := context.Background()
	tx, err := d.Begin(ctx)
	if err != nil {
		t.Fatalf("testdb: hold %q: begin: %v", sql, err)
	}
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		_ = tx.Rollback(ctx)
		t.Fatalf("testdb: hold %q: backend pid: %v", sql, err)
	}
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		_ = tx.Rollback(ctx)
		t.Fatalf("testdb: hold %q: %v", sql, err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if !commit {
				_ = tx.Rollback(ctx)
				return
			}
			if err := tx.Commit(ctx); err != nil {
				t.Errorf("testdb: release %q: commit: %v", sql, err)
			}
		})
	}
	t.Cleanup(release)
	return release, pid
}

// LockWaiters returns the number of sessions of d's database waiting for a
// lock (a row, tuple, transaction, table or advisory lock). Each test
// database belongs to one test, so they are that test's sessions.
func LockWaiters(t testing.TB, d *db.DB) int {
	t.Helper()
	var n int
	if err := d.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
		t.Fatalf("testdb: count lock waiters: %v", err)
	}
	return n
}

// WaitLockWaiters returns once at least n sessions of d's database wait for
// a lock, and fails the test after 15 s. Starting competing requests one at
// a time, each after WaitLockWaiters(t, d, k) for the k requests already
// queued, puts them in a known order on the held lock.
func WaitLockWaiters(t testing.TB, d *db.DB, n int) {
	t.Helper()
	deadline := time.Now().Add(lockWaitTimeout)
	for {
		got := LockWaiters(t, d)
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("testdb: after %v, %d sessions wait for a lock, want %d", lockWaitTimeout, got, n)
		}
		time.Sleep(lockPoll)
	}
}

// WaitBlockedBy returns once some backend waits for a lock held by the
// backend pid (the holder reads its own pid with SELECT pg_backend_pid()).
// done is the blocked party's completion: a value on it first means the
// work finished without waiting for the lock, and fails the test with that
// value (the value is consumed). After 15 s the test fails too.
func WaitBlockedBy[T any](t testing.TB, d *db.DB, pid uint32, done <-chan T) {
	t.Helper()
	deadline := time.Now().Add(lockWaitTimeout)
	for {
		var blocked bool
		if err := d.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE $1::int = ANY(pg_blocking_pids(pid)))`, pid).Scan(&blocked); err != nil {
			t.Fatalf("testdb: look for backends blocked by %d: %v", pid, err)
		}
		if blocked {
			return
		}
		select {
		case v := <-done:
			t.Fatalf("testdb: finished without waiting for the lock held by backend %d: %s", pid, describe(v))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("testdb: after %v, no backend waits for a lock held by backend %d", lockWaitTimeout, pid)
		}
		time.Sleep(lockPoll)
	}
}

// describe shows what a done channel delivered; a recorded HTTP answer as
// its status and body rather than as a struct of pointers.
func describe(v any) string {
	if rec, ok := v.(*httptest.ResponseRecorder); ok && rec != nil {
		return fmt.Sprintf("%d %s", rec.Code, rec.Body.Bytes())
	}
	return fmt.Sprintf("%v", v)
}
