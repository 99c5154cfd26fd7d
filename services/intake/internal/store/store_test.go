package store_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/intake/internal/intake"
	"github.com/opencrm/crm/services/intake/internal/store"
	"github.com/opencrm/crm/services/intake/migrations"
)

func newStore(t *testing.T, orphaned time.Duration) (*store.Store, *db.DB) {
	t.Helper()
	d := testdb.New(t, "intake", func(ctx context.Context, d *db.DB) error {
		return db.Migrate(ctx, d, "intake", migrations.FS)
	}, migrations.FS)
	s, err := store.New(d, store.Options{IdemTTL: 24 * time.Hour, Orphaned: orphaned})
	if err != nil {
		t.Fatal(err)
	}
	return s, d
}

func submission(lease time.Duration) intake.NewSubmission {
	in := intake.Input{FirstName: "Ada", LastName: "L", Email: "a@b.example"}
	intake.Normalize(&in)
	return intake.NewSubmission{APIKeyID: 1, Status: intake.StatusPending, Input: in, Lease: lease}
}

// TestClaimDueSkipsLocked runs several "replicas" claiming at once: every
// due submission is claimed by exactly one of them.
func TestClaimDueSkipsLocked(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, time.Minute)
	ctx := context.Background()
	const n = 60
	for range n {
		if _, err := s.Accept(ctx, submission(0), nil); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var claimed []int64
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				subs, err := s.ClaimDue(ctx, 7, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if len(subs) == 0 {
					return
				}
				mu.Lock()
				for _, sub := range subs {
					claimed = append(claimed, sub.ID)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(claimed)
	want := make([]int64, n)
	for i := range want {
		want[i] = int64(i + 1)
	}
	if diff := cmp.Diff(want, claimed); diff != "" {
		t.Errorf("claimed ids (-want +got):\n%s", diff)
	}
	// Leased: nothing is due until the lease ends.
	if subs, err := s.ClaimDue(ctx, 100, time.Minute); err != nil || len(subs) != 0 {
		t.Errorf("second claim = %d, %v; want none", len(subs), err)
	}
}

func TestClaimDueSkipsNotDueAndFinished(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, time.Minute)
	ctx := context.Background()
	leased, _ := s.Accept(ctx, submission(time.Hour), nil)
	delivered, _ := s.Accept(ctx, submission(0), nil)
	spam := submission(0)
	spam.Status = intake.StatusSpam
	if _, err := s.Accept(ctx, spam, nil); err != nil {
		t.Fatal(err)
	}
	lead := int64(5)
	if err := s.Finish(ctx, intake.Outcome{ID: delivered.Submission.ID, Status: intake.StatusDelivered, LeadID: &lead}); err != nil {
		t.Fatal(err)
	}
	subs, err := s.ClaimDue(ctx, 10, time.Minute)
	if err != nil || len(subs) != 0 {
		t.Errorf("claimed %+v, %v; want none (leased %d, delivered, spam)", subs, err, leased.Submission.ID)
	}
}

func TestIdempotencyRecords(t *testing.T) {
	t.Parallel()
	s, d := newStore(t, time.Minute)
	ctx := context.Background()
	idem := intake.Idem{APIKeyID: 1, Key: "k", Hash: []byte("h1")}

	first, err := s.Accept(ctx, submission(time.Minute), &idem)
	if err != nil || first.Submission.ID == 0 || first.Replay != nil {
		t.Fatalf("first = %+v, %v", first, err)
	}
	_, err = s.Accept(ctx, submission(time.Minute), &idem)
	if !errorIs(err, "request_in_progress") {
		t.Errorf("in flight: err = %v, want request_in_progress", err)
	}
	other := idem
	other.Hash = []byte("h2")
	if _, err := s.Accept(ctx, submission(time.Minute), &other); !errorIs(err, "idempotency_key_reused") {
		t.Errorf("other body: err = %v, want idempotency_key_reused", err)
	}
	receipt := intake.Receipt{LeadID: 41}
	if err := s.Finish(ctx, intake.Outcome{ID: first.Submission.ID, Status: intake.StatusPending,
		NextAttemptAt: time.Now(), Idem: &idem, Receipt: &receipt}); err != nil {
		t.Fatal(err)
	}
	again, err := s.Accept(ctx, submission(time.Minute), &idem)
	if err != nil || again.Replay == nil {
		t.Fatalf("replay = %+v, %v", again, err)
	}
	if diff := cmp.Diff(intake.Receipt{LeadID: 41, Replayed: true}, *again.Replay); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}
	// Scoped to the API key.
	scoped := idem
	scoped.APIKeyID = 2
	if acc, err := s.Accept(ctx, submission(time.Minute), &scoped); err != nil || acc.Submission.ID == 0 {
		t.Errorf("other API key: %+v, %v; want a new submission", acc, err)
	}
	// Expired records start afresh; purge removes them.
	if _, err := d.Exec(ctx, `UPDATE idempotency_requests SET created_at = now() - interval '25 hours' WHERE key = 'k' AND api_key_id = 1`); err != nil {
		t.Fatal(err)
	}
	if acc, err := s.Accept(ctx, submission(time.Minute), &other); err != nil || acc.Submission.ID == 0 {
		t.Errorf("expired key with another body: %+v, %v; want a new submission", acc, err)
	}
	if _, err := d.Exec(ctx, `UPDATE idempotency_requests SET created_at = now() - interval '25 hours'`); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PurgeIdem(ctx, time.Now().Add(-24*time.Hour)); err != nil || n != 2 {
		t.Errorf("purged %d, %v; want 2", n, err)
	}
}

// TestOrphanedInFlight: a request that stored its submission and died
// before answering leaves its key in flight; after the orphan timeout a
// retry gets the submission's current state instead of a second lead.
func TestOrphanedInFlight(t *testing.T) {
	t.Parallel()
	s, d := newStore(t, time.Second)
	ctx := context.Background()
	idem := intake.Idem{APIKeyID: 1, Key: "crash", Hash: []byte("h")}
	first, err := s.Accept(ctx, submission(time.Minute), &idem)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(ctx, `UPDATE idempotency_requests SET created_at = now() - interval '1 minute'`); err != nil {
		t.Fatal(err)
	}
	acc, err := s.Accept(ctx, submission(time.Minute), &idem)
	if err != nil || acc.Orphan == nil || acc.Orphan.ID != first.Submission.ID {
		t.Fatalf("orphan = %+v, %v; want submission %d", acc, err, first.Submission.ID)
	}
}

func errorIs(err error, code string) bool {
	p, ok := err.(*problem.Error)
	if !ok {
		p = problem.From(err)
	}
	return err != nil && p.Code == code
}

// TestFinishManyIsOneTransaction: the outcomes' batch runs in a transaction
// of its own, so its SET LOCAL settings (asynchronous commit, a plan per
// call) take effect instead of drawing PostgreSQL's warning, and every
// outcome is recorded.
func TestFinishManyIsOneTransaction(t *testing.T) {
	t.Parallel()
	_, d := newStore(t, time.Minute)
	ctx := context.Background()
	var mu sync.Mutex
	var notices []string
	cfg := d.Pool.Config()
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		defer mu.Unlock()
		notices = append(notices, n.Severity+": "+n.Message)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := store.New(&db.DB{Pool: pool, Schema: d.Schema}, store.Options{IdemTTL: time.Hour, Orphaned: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var outs []intake.Outcome
	for i := range 3 {
		acc, err := s.Accept(ctx, submission(time.Minute), nil)
		if err != nil {
			t.Fatal(err)
		}
		lead := int64(100 + i)
		outs = append(outs, intake.Outcome{ID: acc.Submission.ID, Status: intake.StatusDelivered, LeadID: &lead})
	}
	if err := s.FinishMany(ctx, outs); err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		sub, err := s.Get(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		if sub.Status != intake.StatusDelivered || sub.LeadID == nil || *sub.LeadID != *o.LeadID {
			t.Errorf("submission %d: status %s lead %v, want delivered as lead %d", o.ID, sub.Status, sub.LeadID, *o.LeadID)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notices) > 0 {
		t.Errorf("PostgreSQL said %q, want nothing", notices)
	}
}
