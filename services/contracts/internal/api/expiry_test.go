package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/services/contracts/internal/contracts"
	"github.com/opencrm/crm/services/contracts/internal/expiry"
)

func notesOf(t *testing.T, e *env, id int64) []string {
	t.Helper()
	r := e.do(t, http.MethodGet, fmt.Sprintf("/contracts/%d/notes", id), e.user, nil)
	var out []string
	for _, n := range r.json(t)["data"].([]any) {
		m := n.(map[string]any)
		if m["created_by"] != nil {
			t.Errorf("system note has created_by %v", m["created_by"])
		}
		out = append(out, m["content"].(string))
	}
	return out
}

func TestExpiryAndRenewal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	past := map[string]any{"start_date": "2019-01-31", "end_date": "2020-01-31"}
	expiring := setStatus(t, e, e.createContract(t, 1, tpl, past), "active")
	renewing := e.createContract(t, 1, tpl, map[string]any{"start_date": "2019-01-31", "end_date": "2020-01-31", "auto_renew": true, "term_months": 12})
	setStatus(t, e, renewing, "active")
	setStatus(t, e, renewing, "executed")
	draft := e.createContract(t, 1, tpl, past)
	future := setStatus(t, e, e.createContract(t, 1, tpl, nil), "active")

	today := contracts.Day(time.Now())
	// Several replicas running at once: each contract is handled once.
	var wg sync.WaitGroup
	results := make([]contracts.ExpiryResult, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.svc.RunExpiry(context.Background(), today)
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	var total contracts.ExpiryResult
	for _, r := range results {
		total.Expired += r.Expired
		total.Renewed += r.Renewed
	}
	if diff := cmp.Diff(contracts.ExpiryResult{Expired: 1, Renewed: 1}, total); diff != "" {
		t.Fatalf("totals (-want +got):\n%s", diff)
	}

	get := func(c map[string]any) map[string]any {
		return e.do(t, http.MethodGet, fmt.Sprintf("/contracts/%d", idOf(c)), e.user, nil).data(t)
	}
	if got := get(expiring); got["status"] != "expired" || got["termination_date"] != "2020-01-31" {
		t.Errorf("expiring: %v %v", got["status"], got["termination_date"])
	}
	wantTerm, terms := contracts.RenewedTermination(time.Date(2020, 1, 31, 0, 0, 0, 0, time.UTC), time.Date(2020, 1, 31, 0, 0, 0, 0, time.UTC), 12, today)
	if got := get(renewing); got["status"] != "executed" || got["termination_date"] != contracts.FormatDate(wantTerm) {
		t.Errorf("renewing: %v %v, want executed %s", got["status"], got["termination_date"], contracts.FormatDate(wantTerm))
	}
	if got := get(draft); got["status"] != "draft" {
		t.Errorf("draft changed: %v", got["status"])
	}
	if got := get(future); got["status"] != "active" {
		t.Errorf("future changed: %v", got["status"])
	}
	if diff := cmp.Diff([]string{contracts.ExpiryNote("2020-01-31")}, notesOf(t, e, idOf(expiring))); diff != "" {
		t.Errorf("expiry notes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{contracts.RenewalNote("2020-01-31", contracts.FormatDate(wantTerm), 12, terms)}, notesOf(t, e, idOf(renewing))); diff != "" {
		t.Errorf("renewal notes (-want +got):\n%s", diff)
	}
	if n := notesOf(t, e, idOf(draft)); len(n) != 0 {
		t.Errorf("draft notes: %v", n)
	}
	// A second run finds nothing.
	again, err := e.svc.RunExpiry(context.Background(), today)
	if err != nil || again != (contracts.ExpiryResult{}) {
		t.Fatalf("second run: %+v %v", again, err)
	}
	// Manual renewal of the expired contract moves its date past today.
	react := setStatus(t, e, get(expiring), "active")
	if react["termination_date"].(string) < contracts.FormatDate(today) {
		t.Errorf("reactivated termination_date %v is in the past", react["termination_date"])
	}
}

// TestExpiryThroughAsynq runs the real job: start-up enqueue, the worker on
// a queue of its own, the run and its note.
func TestExpiryThroughAsynq(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	c := setStatus(t, e, e.createContract(t, 1, tpl, map[string]any{"start_date": "2019-01-31", "end_date": "2020-01-31"}), "active")

	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	queue := "test-contracts-expiry-" + randHex(6)
	job, err := expiry.New(rdb, expiry.Config{Queue: queue, Cron: "0 0 1 1 *", RunOnStart: true},
		e.svc, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()
	defer func() {
		cancel()
		<-done
		insp := asynq.NewInspectorFromRedisClient(rdb)
		_ = insp.DeleteQueue(queue, true)
	}()
	// A second enqueue of the same day is a no-op.
	if err := job.EnqueueDay(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := e.do(t, http.MethodGet, fmt.Sprintf("/contracts/%d", idOf(c)), e.user, nil).data(t)
		if got["status"] == "expired" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("contract not expired by the job: %v", got["status"])
		}
		time.Sleep(200 * time.Millisecond)
	}
	if diff := cmp.Diff([]string{contracts.ExpiryNote("2020-01-31")}, notesOf(t, e, idOf(c))); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}
