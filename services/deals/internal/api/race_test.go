package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/testdb"
)

// The races below are made deterministic with locks rather than timing: a
// transaction of the test holds a lock the requests need, each request is
// started only once the previous one waits on it (as pg_stat_activity
// shows), and the lock is then released. Every request has then done
// whatever it does before taking its locks (the reads a lost update comes
// from), and PostgreSQL serves the waiters in arrival order.

// start sends a request in the background; the returned func waits for
// its answer.
func (e *env) start(method, path, token string, body any) func() resp {
	ch := make(chan resp, 1)
	go func() { ch <- e.do(method, path, token, body) }()
	return func() resp { return <-ch }
}

// Two PUT /quotes of one quote at once: each is applied to the quote as
// the other left it, and the totals are those of the lines stored.
func TestConcurrentQuoteUpdates(t *testing.T) {
	t.Parallel()
	type quoteState struct {
		Status                     string
		ValidUntil                 *string
		Lines                      []lineJSON
		Subtotal, Rate, Tax, Total string
	}
	line200 := []lineJSON{{Description: "Seat", Quantity: json.RawMessage("1"), UnitPrice: "200.00", Amount: "200.00"}}
	line100 := []lineJSON{{Description: "Seat", Quantity: json.RawMessage("1"), UnitPrice: "100.00", Amount: "100.00"}}
	newLines := map[string]any{"line_items": items([3]any{"Seat", 1, "200"})}
	tests := []struct {
		name          string
		first, second map[string]any
		want          quoteState
	}{
		{"new lines, then accepted", newLines, map[string]any{"status": "accepted"},
			quoteState{"accepted", nil, line200, "200.00", "0", "0.00", "200.00"}},
		{"accepted, then new lines", map[string]any{"status": "accepted"}, newLines,
			quoteState{"accepted", nil, line200, "200.00", "0", "0.00", "200.00"}},
		{"tax rate, then new lines", map[string]any{"tax_rate": 10}, newLines,
			quoteState{"draft", nil, line200, "200.00", "10", "20.00", "220.00"}},
		{"new lines, then tax rate", newLines, map[string]any{"tax_rate": 10},
			quoteState{"draft", nil, line200, "200.00", "10", "20.00", "220.00"}},
		{"validity, then tax rate", map[string]any{"valid_until": "2026-12-31"}, map[string]any{"tax_rate": "5"},
			quoteState{"draft", ptr("2026-12-31"), line100, "100.00", "5", "5.00", "105.00"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			d := e.createDeal(map[string]any{"title": "Race"})
			q := e.createQuote(d.ID, map[string]any{"line_items": items([3]any{"Seat", 1, "100"})})

			release := testdb.HoldCommit(t, e.db, `SELECT 1 FROM deals WHERE id = $1 FOR UPDATE`, d.ID)
			first := e.start("PUT", path("/quotes/%d", q.ID), e.user, tc.first)
			testdb.WaitLockWaiters(t, e.db, 1)
			second := e.start("PUT", path("/quotes/%d", q.ID), e.user, tc.second)
			testdb.WaitLockWaiters(t, e.db, 2)
			release()
			e.data(first(), http.StatusOK, nil)
			e.data(second(), http.StatusOK, nil)

			var got quoteJSON
			e.data(e.do("GET", path("/quotes/%d", q.ID), e.user, nil), http.StatusOK, &got)
			state := quoteState{got.Status, got.ValidUntil, got.LineItems, got.Subtotal, string(got.TaxRate), got.Tax, got.Total}
			if diff := cmp.Diff(tc.want, state); diff != "" {
				t.Errorf("quote after both updates (-want +got):\n%s", diff)
			}
		})
	}
}

// Two PUT /deals of one deal at once: the second keeps what the first
// changed in fields it does not name.
func TestConcurrentDealUpdates(t *testing.T) {
	t.Parallel()
	type dealState struct {
		Value, Currency, StageName, Status string
		ExpectedCloseDate                  *string
		AssignedTo                         *int64
	}
	tests := []struct {
		name          string
		first, second map[string]any
		want          dealState
	}{
		{"won, then a new value",
			map[string]any{"title": "Race", "status": "won"}, map[string]any{"title": "Race", "value": "250"},
			dealState{"250.00", "USD", "Closed Won", "won", nil, ptr[int64](userID)}},
		{"new value, then lost",
			map[string]any{"title": "Race", "value": "250"}, map[string]any{"title": "Race", "status": "lost"},
			dealState{"250.00", "USD", "Closed Lost", "lost", nil, ptr[int64](userID)}},
		{"currency, then close date",
			map[string]any{"title": "Race", "currency": "EUR"}, map[string]any{"title": "Race", "expected_close_date": "2026-09-30"},
			dealState{"100.00", "EUR", "Prospecting", "open", ptr("2026-09-30"), ptr[int64](userID)}},
		{"reassigned, then won",
			map[string]any{"title": "Race", "assigned_to": otherID}, map[string]any{"title": "Race", "status": "won"},
			dealState{"100.00", "USD", "Closed Won", "won", nil, ptr[int64](otherID)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			d := e.createDeal(map[string]any{"title": "Race", "value": "100"})

			release := testdb.HoldCommit(t, e.db, `SELECT 1 FROM deals WHERE id = $1 FOR UPDATE`, d.ID)
			first := e.start("PUT", path("/deals/%d", d.ID), e.user, tc.first)
			testdb.WaitLockWaiters(t, e.db, 1)
			second := e.start("PUT", path("/deals/%d", d.ID), e.user, tc.second)
			testdb.WaitLockWaiters(t, e.db, 2)
			release()
			e.data(first(), http.StatusOK, nil)
			e.data(second(), http.StatusOK, nil)

			var got dealJSON
			e.data(e.do("GET", path("/deals/%d", d.ID), e.user, nil), http.StatusOK, &got)
			state := dealState{got.Value, got.Currency, got.StageName, got.Status, got.ExpectedCloseDate, got.AssignedTo}
			if diff := cmp.Diff(tc.want, state); diff != "" {
				t.Errorf("deal after both updates (-want +got):\n%s", diff)
			}
		})
	}
}

// A stage's outcome change and a deal write into that stage at once: the
// stage change waits for the deal and then refuses (decisions: changing
// the outcome of a stage that holds deals → 409 stage_in_use).
func TestStageOutcomeChangeRacingDealWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		// request returns the deal write into stage (after any setup).
		request func(e *env, stage int64) (method, path string, body map[string]any)
	}{
		{"deal created in the stage", http.StatusCreated, func(e *env, stage int64) (string, string, map[string]any) {
			return "POST", "/deals", map[string]any{"title": "Busy", "stage_id": stage}
		}},
		{"deal moved into the stage", http.StatusOK, func(e *env, stage int64) (string, string, map[string]any) {
			d := e.createDeal(map[string]any{"title": "Busy"})
			return "PUT", path("/deals/%d", d.ID), map[string]any{"title": "Busy", "stage_id": stage}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			stage := e.stages()["Proposal"]
			method, target, body := tc.request(e, stage.ID)

			// The deal write stops at its outbox insert, holding its
			// uncommitted deal and its FOR SHARE lock of the stage.
			release := testdb.HoldCommit(t, e.db, `LOCK TABLE outbox IN EXCLUSIVE MODE`)
			write := e.start(method, target, e.user, body)
			testdb.WaitLockWaiters(t, e.db, 1)
			change := e.start("PUT", path("/deal-stages/%d", stage.ID), e.admin, map[string]any{"name": "Proposal", "outcome": "won"})
			testdb.WaitLockWaiters(t, e.db, 2)
			release()

			var d dealJSON
			e.data(write(), tc.status, &d)
			wantProblem(t, change(), http.StatusConflict, "stage_in_use")
			var got stageJSON
			e.data(e.do("GET", path("/deal-stages/%d", stage.ID), e.user, nil), http.StatusOK, &got)
			e.data(e.do("GET", path("/deals/%d", d.ID), e.user, nil), http.StatusOK, &d)
			if diff := cmp.Diff([]string{"open", "Proposal", "open"}, []string{got.Outcome, d.StageName, d.Status}); diff != "" {
				t.Errorf("stage outcome, deal stage, deal status (-want +got):\n%s", diff)
			}
		})
	}
}

// company.created/updated events may be redelivered or arrive out of
// order; a deal keeps the name of the newest version of its company, and a
// deal write does not undo a newer name with an older lookup.
func TestCompanyEventsIgnoreOlderVersions(t *testing.T) {
	t.Parallel()
	event := func(typ, name, at string) outbox.Event {
		data, _ := json.Marshal(map[string]any{"id": 100, "name": name, "domain": "acme.test", "updated_at": at})
		return outbox.Event{ID: 1, Type: typ, AggregateID: "100", Data: data}
	}
	// The fake contacts answers Acme as of 2026-01-01.
	v0 := event("company.created", "Acme Inc", "2025-12-01T00:00:00.000000Z")
	v1 := event("company.updated", "Acme One", "2026-02-01T00:00:00.000000Z")
	v2 := event("company.updated", "Acme Two", "2026-03-01T10:00:00.123456Z")
	v2early := event("company.updated", "Acme Early", "2026-03-01T10:00:00.123455Z")
	noVersion := outbox.Event{ID: 1, Type: "company.updated", AggregateID: "100", Data: json.RawMessage(`{"id":100,"name":"Acme ?"}`)}
	tests := []struct {
		name    string
		events  []outbox.Event
		thenPut bool // an unrelated edit of the deal after the events
		want    string
	}{
		{"in order", []outbox.Event{v1, v2}, false, "Acme Two"},
		{"newer first", []outbox.Event{v2, v1}, false, "Acme Two"},
		{"one microsecond older", []outbox.Event{v2, v2early}, false, "Acme Two"},
		{"redelivered", []outbox.Event{v1, v2, v1, v2}, false, "Acme Two"},
		{"created after updated", []outbox.Event{v1, v0}, false, "Acme One"},
		{"older than the deal's lookup", []outbox.Event{v0}, false, "Acme"},
		{"no version", []outbox.Event{noVersion}, false, "Acme"},
		{"edit after a newer event", []outbox.Event{v2}, true, "Acme Two"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			d := e.createDeal(map[string]any{"title": "Versioned", "company_id": 100})
			for _, ev := range tc.events {
				if err := e.store.HandleContactsEvent(context.Background(), ev); err != nil {
					t.Fatal(err)
				}
			}
			if tc.thenPut {
				e.data(e.do("PUT", path("/deals/%d", d.ID), e.user, map[string]any{"title": "Edited"}), http.StatusOK, nil)
			}
			var got dealJSON
			e.data(e.do("GET", path("/deals/%d", d.ID), e.user, nil), http.StatusOK, &got)
			if diff := cmp.Diff(ptr(tc.want), got.CompanyName); diff != "" {
				t.Errorf("company_name (-want +got):\n%s", diff)
			}
		})
	}
}
