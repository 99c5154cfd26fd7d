package api_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
)

// requestID is the one part of a problem body that differs per request.
var requestID = regexp.MustCompile(`"request_id":"[^"]*"`)

// wantBody asserts the exact bytes of an answer, request_id aside.
func wantBody(t *testing.T, r resp, status int, want string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	if !requestID.Match(r.Body) {
		t.Errorf("no request_id in %s", r.Body)
	}
	got := requestID.ReplaceAllString(string(r.Body), `"request_id":"…"`)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

// valueProblem is the exact 422 body for a deal value refused with msg.
func valueProblem(msg string) string {
	return `{"type":"/docs/problems#validation_failed","title":"Unprocessable Entity","status":422,` +
		`"detail":"one or more fields are invalid","code":"validation_failed","request_id":"…",` +
		`"errors":[{"field":"value","message":"` + msg + `"}]}` + "\n"
}

// eventValue is the value of the deal in its newest outbox event.
func (e *env) eventValue(id int64) (typ, value string) {
	e.t.Helper()
	err := e.db.QueryRow(context.Background(), `SELECT type, payload->>'value' FROM outbox
		WHERE stream = 'crm:events:deals' AND aggregate_id = $1 ORDER BY id DESC LIMIT 1`, strconv.FormatInt(id, 10)).Scan(&typ, &value)
	if err != nil {
		e.t.Fatal(err)
	}
	return typ, value
}

// A deal's value is rendered with exactly 2 places in every currency
// (a decimal with 2 places), everywhere deals sends it: the
// public API (create, read, list, update), the internal API leads and
// contracts read (create, read, merge) and the outbox events. Input may
// carry at most min(2, the currency's minor digits) decimals; more is a
// 422 on value naming the limit, with nothing stored.
func TestDealValueTwoPlacesEveryCurrency(t *testing.T) {
	t.Parallel()
	const (
		twoPlaces = "must have at most 2 decimal places in this currency"
		whole     = "must be a whole number in this currency"
	)
	tests := []struct {
		currency string
		create   any    // value sent on create
		want     string // as rendered
		update   any    // value sent on update
		updated  string // as rendered
		bad      any    // a value with too many decimals for the currency
		badMsg   string
		zeros    any // too many decimals, but all zeros: accepted
		zerosOut string
	}{
		{"USD", "1234.5", "1234.50", 99.9, "99.90", "1.234", twoPlaces, "7.000", "7.00"},
		{"JPY", 1200, "1200.00", "1500", "1500.00", "10.5", whole, "1500.00", "1500.00"},
		{"KWD", "1.25", "1.25", "1.250", "1.25", "1.255", twoPlaces, "3.2500", "3.25"},
	}
	for _, tc := range tests {
		t.Run(tc.currency, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			d := e.createDeal(map[string]any{"title": "Money", "currency": tc.currency, "value": tc.create})
			if d.Value != tc.want || d.Currency != tc.currency {
				t.Errorf("POST /deals: value %q %s, want %q %s", d.Value, d.Currency, tc.want, tc.currency)
			}

			// Every read and every event carries the same string.
			reads := func(want string) {
				t.Helper()
				var got dealJSON
				e.data(e.do("GET", path("/deals/%d", d.ID), e.user, nil), http.StatusOK, &got)
				var internal dealJSON
				e.data(e.internal("GET", dealsapi.DealPath(d.ID), nil), http.StatusOK, &internal)
				listed := ""
				for _, x := range e.list("", e.user).Data {
					if x.ID == d.ID {
						listed = x.Value
					}
				}
				_, event := e.eventValue(d.ID)
				seen := map[string]string{
					"GET /deals/{id}": got.Value, "GET /internal/deals/{id}": internal.Value,
					"GET /deals": listed, "merge deal": e.merge(d.ID).Deal.Value, "outbox event": event,
				}
				for where, v := range seen {
					if v != want {
						t.Errorf("%s: value %q, want %q", where, v, want)
					}
				}
			}
			reads(tc.want)

			var upd dealJSON
			e.data(e.do("PUT", path("/deals/%d", d.ID), e.user, map[string]any{"title": "Money", "value": tc.update}), http.StatusOK, &upd)
			if upd.Value != tc.updated {
				t.Errorf("PUT /deals/{id}: value %q, want %q", upd.Value, tc.updated)
			}
			if typ, v := e.eventValue(d.ID); typ != "deal.updated" || v != tc.updated {
				t.Errorf("event after update: %s %q, want deal.updated %q", typ, v, tc.updated)
			}
			reads(tc.updated)

			// Trailing zeros past the limit are accepted.
			z := e.createDeal(map[string]any{"title": "Zeros", "currency": tc.currency, "value": tc.zeros})
			if z.Value != tc.zerosOut {
				t.Errorf("POST /deals %v: value %q, want %q", tc.zeros, z.Value, tc.zerosOut)
			}

			// Too many decimals: the exact 422, on every write path.
			want := valueProblem(tc.badMsg)
			wantBody(t, e.do("POST", "/deals", e.user, map[string]any{"title": "x", "currency": tc.currency, "value": tc.bad}),
				http.StatusUnprocessableEntity, want)
			wantBody(t, e.do("PUT", path("/deals/%d", d.ID), e.user, map[string]any{"title": "x", "value": tc.bad}),
				http.StatusUnprocessableEntity, want)
			wantBody(t, e.internal("POST", dealsapi.PathDeals, map[string]any{"title": "x", "currency": tc.currency, "value": tc.bad},
				"Idempotency-Key", "bad-"+tc.currency), http.StatusUnprocessableEntity, want)
			reads(tc.updated) // the refused update changed nothing
			if total := e.list("", e.user).Total; total != 2 {
				t.Errorf("deals stored = %d, want 2", total)
			}

			// The internal create (lead qualification) renders the same way.
			r := e.internal("POST", dealsapi.PathDeals, map[string]any{"title": "Lead", "currency": tc.currency, "value": tc.create},
				"Idempotency-Key", "lead-"+tc.currency)
			var in dealJSON
			e.data(r, http.StatusCreated, &in)
			if in.Value != tc.want {
				t.Errorf("POST /internal/deals: value %q, want %q", in.Value, tc.want)
			}
			if typ, v := e.eventValue(in.ID); typ != "deal.created" || v != tc.want {
				t.Errorf("event after internal create: %s %q, want deal.created %q", typ, v, tc.want)
			}
		})
	}
}

// Changing a deal's currency re-checks its value against the new limit,
// min(2, minor digits): into JPY only whole amounts, into KWD anything a
// 2-place value holds.
func TestDealCurrencyChangeRechecksValue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		from, value, to string
		status          int
		want            string // the value after the change, or the 422 body
	}{
		{"USD", "10.50", "JPY", http.StatusUnprocessableEntity, valueProblem("must be a whole number in this currency")},
		{"USD", "10.00", "JPY", http.StatusOK, "10.00"},
		{"USD", "10.55", "KWD", http.StatusOK, "10.55"},
		{"KWD", "1.25", "USD", http.StatusOK, "1.25"},
		{"JPY", "1200", "KWD", http.StatusOK, "1200.00"},
	}
	for _, tc := range tests {
		t.Run(tc.from+" "+tc.value+" → "+tc.to, func(t *testing.T) {
			d := e.createDeal(map[string]any{"title": "FX", "currency": tc.from, "value": tc.value})
			r := e.do("PUT", path("/deals/%d", d.ID), e.user, map[string]any{"title": "FX", "currency": tc.to})
			if tc.status != http.StatusOK {
				wantBody(t, r, tc.status, tc.want)
				return
			}
			var got dealJSON
			e.data(r, http.StatusOK, &got)
			if got.Value != tc.want || got.Currency != tc.to {
				t.Errorf("after change: %q %s, want %q %s", got.Value, got.Currency, tc.want, tc.to)
			}
		})
	}
}

// Quotes keep the currency's minor digits (quote money has no fixed
// places), so contracts' merge answer holds both scales for a KWD deal:
// the deal's value with 2 places, the quote's money with 3.
func TestMergeDealValueAndQuoteScales(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		currency, value, price string
		deal, total            string
	}{
		{"USD", "12500.5", "19.99", "12500.50", "19.99"},
		{"JPY", "1234567", "1005", "1234567.00", "1005"},
		{"KWD", "1250", "1.255", "1250.00", "1.255"},
	}
	for _, tc := range tests {
		d := e.createDeal(map[string]any{"title": "Merge", "currency": tc.currency, "value": tc.value})
		e.createQuote(d.ID, map[string]any{"line_items": items([3]any{"x", 1, tc.price})})
		m := e.merge(d.ID)
		got := []string{m.Deal.Value, m.Quote.Total, m.Quote.LineItems[0].UnitPrice}
		if diff := cmp.Diff([]string{tc.deal, tc.total, tc.price}, got); diff != "" {
			t.Errorf("%s merge: deal value, quote total, unit price (-want +got):\n%s", tc.currency, diff)
		}
	}
}

// A value stored before values were limited to 2 places (KWD 1.255) is
// shown exactly, never rounded, and must be corrected by the next write.
func TestLegacyDealValueWithThreeDecimals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.createDeal(map[string]any{"title": "Legacy", "currency": "KWD", "value": "1.25"})
	if _, err := e.db.Exec(context.Background(), `UPDATE deals SET value = 1.255 WHERE id = $1`, d.ID); err != nil {
		t.Fatal(err)
	}
	var got dealJSON
	e.data(e.do("GET", path("/deals/%d", d.ID), e.user, nil), http.StatusOK, &got)
	if got.Value != "1.255" {
		t.Errorf("legacy value = %q, want 1.255 (not rounded)", got.Value)
	}
	wantBody(t, e.do("PUT", path("/deals/%d", d.ID), e.user, map[string]any{"title": "Renamed"}),
		http.StatusUnprocessableEntity, valueProblem("must have at most 2 decimal places in this currency"))
	e.data(e.do("PUT", path("/deals/%d", d.ID), e.user, map[string]any{"title": "Renamed", "value": "1.26"}), http.StatusOK, &got)
	if got.Value != "1.26" {
		t.Errorf("corrected value = %q, want 1.26", got.Value)
	}
}
