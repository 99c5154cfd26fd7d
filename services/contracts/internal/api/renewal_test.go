package api_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
	"github.com/opencrm/crm/services/contracts/internal/expiry"
	"github.com/opencrm/crm/services/contracts/internal/store"
)

func day(t *testing.T, s string) time.Time {
	t.Helper()
	d, err := contracts.ParseDate(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func terminationOf(t *testing.T, e *env, c map[string]any) string {
	t.Helper()
	return e.do(t, http.MethodGet, fmt.Sprintf("/contracts/%d", idOf(c)), e.user, nil).data(t)["termination_date"].(string)
}

// renewalCases are contracts whose stored termination dates get clamped:
// one-month terms from a 31st and twelve-month terms from a leap day.
var renewalCases = []struct {
	name    string
	body    map[string]any
	initial string
	// days are the daily runs that renew; want the termination after each.
	days, want []string
	months     int
	// catchUp is the note of one run on the last day: it adds all the
	// terms the daily runs added one by one and names their total.
	catchUp string
}{
	{"monthly from Dec 31 (effective_date)",
		map[string]any{"start_date": "2025-12-31", "term_months": 1, "auto_renew": true}, "2026-01-31",
		[]string{"2026-02-01", "2026-03-01", "2026-04-01"}, []string{"2026-02-28", "2026-03-31", "2026-04-30"}, 1,
		"Contract renewed automatically by 3 months (3 terms of 1): termination date moved from 2026-01-31 to 2026-04-30."},
	{"monthly from end_date Jan 31",
		map[string]any{"start_date": "2026-01-01", "end_date": "2026-01-31", "term_months": 1, "auto_renew": true}, "2026-01-31",
		[]string{"2026-02-01", "2026-03-01", "2026-04-01"}, []string{"2026-02-28", "2026-03-31", "2026-04-30"}, 1,
		"Contract renewed automatically by 3 months (3 terms of 1): termination date moved from 2026-01-31 to 2026-04-30."},
	{"yearly from leap day",
		map[string]any{"start_date": "2024-02-29", "term_months": 12, "auto_renew": true}, "2025-02-28",
		[]string{"2025-03-01", "2026-03-01", "2027-03-01"}, []string{"2026-02-28", "2027-02-28", "2028-02-29"}, 12,
		"Contract renewed automatically by 36 months (3 terms of 12): termination date moved from 2025-02-28 to 2028-02-29."},
}

// TestRenewalDatesDoNotDrift: the daily job renews from the contract's
// anchor, so month ends and leap days survive clamped renewals, and a
// catch-up run after missed days lands on the dates daily runs give.
func TestRenewalDatesDoNotDrift(t *testing.T) {
	t.Parallel()
	for _, tc := range renewalCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.deals.set(1, mergeFor(1, "Deal", "Acme"))
			tpl := e.createTemplate(t, nil)
			ctx := context.Background()

			daily := setStatus(t, e, e.createContract(t, 1, tpl, tc.body), "active")
			if got := daily["termination_date"]; got != tc.initial {
				t.Fatalf("initial termination_date %v, want %s", got, tc.initial)
			}
			var got, wantNotes []string
			from := tc.initial
			for i, d := range tc.days {
				res, err := e.svc.RunExpiry(ctx, day(t, d))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(contracts.ExpiryResult{Renewed: 1}, res); diff != "" {
					t.Errorf("run %s (-want +got):\n%s", d, diff)
				}
				got = append(got, terminationOf(t, e, daily))
				wantNotes = append(wantNotes, contracts.RenewalNote(from, tc.want[i], tc.months, 1))
				from = tc.want[i]
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("daily runs (-want +got):\n%s", diff)
			}
			gotNotes := notesOf(t, e, idOf(daily))
			// Notes are listed newest first.
			for i, j := 0, len(gotNotes)-1; i < j; i, j = i+1, j-1 {
				gotNotes[i], gotNotes[j] = gotNotes[j], gotNotes[i]
			}
			if diff := cmp.Diff(wantNotes, gotNotes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}

			// The same contract, renewed once on the last day only.
			last, final := tc.days[len(tc.days)-1], tc.want[len(tc.want)-1]
			catchUp := setStatus(t, e, e.createContract(t, 1, tpl, tc.body), "active")
			res, err := e.svc.RunExpiry(ctx, day(t, last))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(contracts.ExpiryResult{Renewed: 1}, res); diff != "" {
				t.Errorf("catch-up run (-want +got):\n%s", diff)
			}
			if got := terminationOf(t, e, catchUp); got != final {
				t.Errorf("catch-up termination_date %s, want %s", got, final)
			}
			if diff := cmp.Diff([]string{tc.catchUp}, notesOf(t, e, idOf(catchUp))); diff != "" {
				t.Errorf("catch-up notes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestManualRenewalDatesDoNotDrift: expired → active after a clamped
// renewal moves the date from the anchor too.
func TestManualRenewalDatesDoNotDrift(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		body        map[string]any
		renewOn     string // the job's run: stores a clamped date
		stored      string
		today, want string // manual renewal on today
	}{
		{"monthly from Dec 31", map[string]any{"start_date": "2025-12-31", "term_months": 1, "auto_renew": true},
			"2026-02-01", "2026-02-28", "2026-03-15", "2026-03-31"},
		{"monthly from end_date Jan 31", map[string]any{"start_date": "2026-01-01", "end_date": "2026-01-31", "term_months": 1, "auto_renew": true},
			"2026-02-01", "2026-02-28", "2026-04-15", "2026-04-30"},
		{"yearly from leap day", map[string]any{"start_date": "2024-02-29", "term_months": 12, "auto_renew": true},
			"2025-03-01", "2026-02-28", "2027-03-01", "2028-02-29"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			today := day(t, tc.today)
			e := newEnvAt(t, func() time.Time { return today.Add(9 * time.Hour) })
			e.deals.set(1, mergeFor(1, "Deal", "Acme"))
			tpl := e.createTemplate(t, nil)
			c := setStatus(t, e, e.createContract(t, 1, tpl, tc.body), "active")
			if _, err := e.svc.RunExpiry(context.Background(), day(t, tc.renewOn)); err != nil {
				t.Fatal(err)
			}
			if got := terminationOf(t, e, c); got != tc.stored {
				t.Fatalf("after the job termination_date %s, want %s", got, tc.stored)
			}
			setStatus(t, e, c, "expired")
			got := setStatus(t, e, c, "active")
			if diff := cmp.Diff(map[string]any{"status": "active", "termination_date": tc.want},
				map[string]any{"status": got["status"], "termination_date": got["termination_date"]}); diff != "" {
				t.Errorf("manual renewal (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExpiryWaitsOutShortRowLock: a due contract whose row another
// transaction holds is not skipped for the day: the run's final pass waits
// for the lock (briefly) and expires it.
func TestExpiryWaitsOutShortRowLock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	c := setStatus(t, e, e.createContract(t, 1, tpl, map[string]any{"start_date": "2019-01-31", "end_date": "2020-01-31"}), "active")

	release := testdb.Hold(t, e.db, `SELECT 1 FROM contracts WHERE id = $1 FOR UPDATE`, idOf(c))
	type result struct {
		res contracts.ExpiryResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := e.svc.RunExpiry(context.Background(), contracts.Day(time.Now()))
		done <- result{res, err}
	}()
	testdb.WaitLockWaiters(t, e.db, 1)
	release()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if diff := cmp.Diff(contracts.ExpiryResult{Expired: 1}, r.res); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	got := e.do(t, http.MethodGet, fmt.Sprintf("/contracts/%d", idOf(c)), e.user, nil).data(t)
	if got["status"] != "expired" {
		t.Errorf("status %v, want expired", got["status"])
	}
	if diff := cmp.Diff([]string{contracts.ExpiryNote("2020-01-31")}, notesOf(t, e, idOf(c))); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

// TestExpiryRetriesLongRowLock: a row held longer than the final pass
// waits ends the run with ErrDueLocked (the rest done), and the asynq task
// is retried and renews the contract once the lock is gone.
func TestExpiryRetriesLongRowLock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	held := setStatus(t, e, e.createContract(t, 1, tpl, map[string]any{
		"start_date": "2019-01-31", "end_date": "2020-01-31", "term_months": 12, "auto_renew": true}), "active")
	free := setStatus(t, e, e.createContract(t, 1, tpl, map[string]any{"start_date": "2019-01-31", "end_date": "2020-01-31"}), "active")

	svc, err := contracts.NewService(contracts.Deps{
		Store: store.New(e.db).WithExpiryLockWait(50 * time.Millisecond), Deals: dealsDownClient("http://127.0.0.1:1"), Renderer: noRenderer{},
	})
	if err != nil {
		t.Fatal(err)
	}
	today := contracts.Day(time.Now())
	release := testdb.Hold(t, e.db, `SELECT 1 FROM contracts WHERE id = $1 FOR UPDATE`, idOf(held))

	// A direct run: the free contract expires, the held one is reported.
	res, err := svc.RunExpiry(context.Background(), today)
	if !errors.Is(err, contracts.ErrDueLocked) {
		t.Fatalf("run error %v, want ErrDueLocked", err)
	}
	if diff := cmp.Diff(contracts.ExpiryResult{Expired: 1}, res); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	if got := e.do(t, http.MethodGet, fmt.Sprintf("/contracts/%d", idOf(free)), e.user, nil).data(t); got["status"] != "expired" {
		t.Errorf("free contract status %v, want expired", got["status"])
	}

	// Through asynq: the day's task fails while the lock is held and its
	// retry renews the contract after the release.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	queue := "test-contracts-expiry-" + randHex(6)
	job, err := expiry.New(rdb, expiry.Config{Queue: queue, Cron: "0 0 1 1 *", RunOnStart: true, LockedRetryDelay: 100 * time.Millisecond},
		svc, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()
	insp := asynq.NewInspectorFromRedisClient(rdb)
	defer func() {
		cancel()
		<-done
		_ = insp.DeleteQueue(queue, true)
	}()
	taskID := queue + ":" + contracts.FormatDate(today)
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := insp.GetTaskInfo(queue, taskID)
		if err == nil && info.Retried >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the day's task did not fail on the locked contract: %+v %v", info, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	release()
	want, terms := contracts.RenewedTermination(day(t, "2020-01-31"), day(t, "2020-01-31"), 12, today)
	for {
		got := terminationOf(t, e, held)
		if got == contracts.FormatDate(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("contract not renewed by the retry: termination_date %s, want %s", got, contracts.FormatDate(want))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if diff := cmp.Diff([]string{contracts.RenewalNote("2020-01-31", contracts.FormatDate(want), 12, terms)}, notesOf(t, e, idOf(held))); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

// TestPutNullTermMonths: "term_months": null goes back to the template's
// default_term_months (the new template's when template_id changes).
func TestPutNullTermMonths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl24 := e.createTemplate(t, map[string]any{"default_term_months": 24})
	tpl6 := e.createTemplate(t, map[string]any{"name": "Short licence", "default_term_months": 6})
	tests := []struct {
		name     string
		template int64
		want     map[string]any
	}{
		{"same template", tpl24, map[string]any{"template_id": float64(tpl24), "term_months": float64(24), "termination_date": "2028-01-31"}},
		{"new template", tpl6, map[string]any{"template_id": float64(tpl6), "term_months": float64(6), "termination_date": "2026-07-31"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := e.createContract(t, 1, tpl24, map[string]any{"start_date": "2026-01-31", "term_months": 12})
			if c["term_months"] != float64(12) || c["termination_date"] != "2027-01-31" {
				t.Fatalf("created with %v, %v", c["term_months"], c["termination_date"])
			}
			r := e.do(t, http.MethodPut, fmt.Sprintf("/contracts/%d", idOf(c)), e.user, map[string]any{
				"deal_id": 1, "template_id": tc.template, "title": "Licence agreement", "term_months": nil,
			})
			if r.status != http.StatusOK {
				t.Fatalf("PUT: %d %s", r.status, r.body)
			}
			d := r.data(t)
			got := map[string]any{"template_id": d["template_id"], "term_months": d["term_months"], "termination_date": d["termination_date"]}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
