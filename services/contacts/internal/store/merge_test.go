package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// TestAdvance: a failed step leaves the merge running, due after the
// backoff; the runner's pick (id 0) skips a merge not yet due and one
// another transaction holds; a step done is not run again.
func TestAdvance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := newTestStore(t)
	var a, b int64
	if err := d.QueryRow(ctx, `WITH c AS (INSERT INTO contacts (first_name, last_name) VALUES ('A', 'A'), ('B', 'B') RETURNING id)
		SELECT min(id), max(id) FROM c`).Scan(&a, &b); err != nil {
		t.Fatal(err)
	}
	keep := func(c contacts.Contact, _ []contacts.Contact, _ []customfield.Definition) (contacts.Contact, error) {
		return c, nil
	}
	m, replayed, err := s.MergeContacts(ctx, contacts.MergeRequest{Object: "contact", Survivor: a, Merged: []int64{b},
		Given: []int64{b}, Fields: map[string]int64{}}, []string{"deals", "leads"}, keep)
	if err != nil || replayed || m.Status != contactsapi.MergeRunning {
		t.Fatalf("merge %+v, %v, %v", m, replayed, err)
	}
	calls := map[string]int{}
	down := true
	step := func(_ context.Context, _ contacts.Merge, _ []string, mover string) (mergeapi.Moved, error) {
		calls[mover]++
		if mover == "deals" && down {
			return nil, errors.New("deals unavailable")
		}
		return mergeapi.Moved{mover: 1}, nil
	}
	retry := func(n int) time.Duration { return time.Duration(n) * time.Hour }

	got, ok, err := s.Advance(ctx, m.ID, step, retry)
	if err != nil || !ok || got.Status != contactsapi.MergeRunning {
		t.Fatalf("first attempt: %+v %v %v", got, ok, err)
	}
	if got.Steps[0].Error != "deals unavailable" || got.Steps[0].Attempts != 1 || got.Steps[1].Status != stepDone {
		t.Errorf("steps after the first attempt: %+v", got.Steps)
	}
	var wait time.Duration
	if err := d.QueryRow(ctx, `SELECT extract(epoch FROM next_at - now())::int * interval '1 second' FROM merges WHERE id = $1`,
		m.ID).Scan(&wait); err != nil || wait < 59*time.Minute || wait > time.Hour {
		t.Errorf("due in %v (%v), want an hour", wait, err)
	}
	if _, ok, err := s.Advance(ctx, 0, step, retry); ok || err != nil {
		t.Errorf("runner took a merge not due: %v %v", ok, err)
	}

	// Due now, but held by another transaction (a replica's runner).
	if _, err := d.Exec(ctx, `UPDATE merges SET next_at = now() WHERE id = $1`, m.ID); err != nil {
		t.Fatal(err)
	}
	tx, err := d.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM merges WHERE id = $1 FOR UPDATE`, m.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{0, m.ID} {
		if _, ok, err := s.Advance(ctx, id, step, retry); ok || err != nil {
			t.Errorf("Advance(%d) took a held merge: %v %v", id, ok, err)
		}
	}
	if err := tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		t.Fatal(err)
	}

	down = false
	got, ok, err = s.Advance(ctx, 0, step, retry)
	if err != nil || !ok || got.Status != contactsapi.MergeCompleted || got.CompletedAt == nil {
		t.Fatalf("runner: %+v %v %v", got, ok, err)
	}
	if calls["deals"] != 2 || calls["leads"] != 1 {
		t.Errorf("calls %v, want deals twice and leads once", calls)
	}
	if _, ok, err := s.Advance(ctx, m.ID, step, retry); ok || err != nil {
		t.Errorf("a completed merge advanced: %v %v", ok, err)
	}
}
