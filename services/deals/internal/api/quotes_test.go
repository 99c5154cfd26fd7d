package api_test

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func (e *env) createQuote(dealID int64, body map[string]any) quoteJSON {
	e.t.Helper()
	var q quoteJSON
	e.data(e.do("POST", path("/deals/%d/quotes", dealID), e.user, body), http.StatusCreated, &q)
	return q
}

func items(lines ...[3]any) []map[string]any {
	out := []map[string]any{}
	for _, l := range lines {
		out = append(out, map[string]any{"description": l[0], "quantity": l[1], "unit_price": l[2]})
	}
	return out
}

func TestQuoteTotals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	usd := e.createDeal(map[string]any{"title": "USD deal"})
	jpy := e.createDeal(map[string]any{"title": "JPY deal", "currency": "JPY"})
	kwd := e.createDeal(map[string]any{"title": "KWD deal", "currency": "KWD"})

	tests := []struct {
		name                       string
		deal                       int64
		body                       map[string]any
		amounts                    []string
		subtotal, tax, total, rate string
		currency                   string
	}{
		{"3 × 19.99", usd.ID, map[string]any{"line_items": items([3]any{"Seat", 3, 19.99})},
			[]string{"59.97"}, "59.97", "0.00", "59.97", "0", "USD"},
		{"strings and tax", usd.ID, map[string]any{"tax_rate": 19, "line_items": items([3]any{"Seat", "3", "19.99"}, [3]any{"Setup", 1, "100"})},
			[]string{"59.97", "100.00"}, "159.97", "30.39", "190.36", "19", "USD"},
		{"half-even down: 10.005 → 10.00", usd.ID, map[string]any{"tax_rate": 10, "line_items": items([3]any{"x", 1, "100.05"})},
			[]string{"100.05"}, "100.05", "10.00", "110.05", "10", "USD"},
		{"half-even up: 10.015 → 10.02", usd.ID, map[string]any{"tax_rate": "10", "line_items": items([3]any{"x", 1, "100.15"})},
			[]string{"100.15"}, "100.15", "10.02", "110.17", "10", "USD"},
		{"fractional quantity rounds the amount", usd.ID, map[string]any{"line_items": items([3]any{"Hours", "1.5", "0.25"})},
			[]string{"0.38"}, "0.38", "0.00", "0.38", "0", "USD"},
		{"JPY has no minor unit", jpy.ID, map[string]any{"tax_rate": 10, "line_items": items([3]any{"Box", 3, 1005})},
			[]string{"3015"}, "3015", "302", "3317", "10", "JPY"},
		{"KWD has three", kwd.ID, map[string]any{"tax_rate": "7.5", "line_items": items([3]any{"Kit", 2, "1.255"})},
			[]string{"2.510"}, "2.510", "0.188", "2.698", "7.5", "KWD"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := e.createQuote(tc.deal, tc.body)
			var amounts []string
			for _, l := range q.LineItems {
				amounts = append(amounts, l.Amount)
			}
			got := []string{q.Subtotal, q.Tax, q.Total, string(q.TaxRate), q.Currency, q.Status}
			want := []string{tc.subtotal, tc.tax, tc.total, tc.rate, tc.currency, "draft"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("subtotal, tax, total, rate, currency, status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.amounts, amounts); diff != "" {
				t.Errorf("amounts (-want +got):\n%s", diff)
			}
		})
	}
}

var quoteNumber = regexp.MustCompile(`^Q-(\d{4})-(\d{5})$`)

func TestQuoteLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.createDeal(map[string]any{"title": "Deal"})
	q := e.createQuote(d.ID, map[string]any{"valid_until": "2026-06-30", "tax_rate": 20,
		"line_items": items([3]any{"A", 2, "10.00"})})
	m := quoteNumber.FindStringSubmatch(q.QuoteNumber)
	if m == nil || m[1] != strconv.Itoa(time.Now().UTC().Year()) || m[2] != "00001" {
		t.Errorf("first quote number = %q", q.QuoteNumber)
	}
	if q.DealID != d.ID || q.ValidUntil == nil || *q.ValidUntil != "2026-06-30" || string(q.LineItems[0].Quantity) != "2" || q.LineItems[0].UnitPrice != "10.00" {
		t.Errorf("quote = %+v", q)
	}

	var got quoteJSON
	e.data(e.do("GET", path("/quotes/%d", q.ID), e.other, nil), http.StatusOK, &got)
	if diff := cmp.Diff(q, got); diff != "" {
		t.Errorf("read quote (-want +got):\n%s", diff)
	}

	// Status only: lines and totals stay.
	var sent quoteJSON
	e.data(e.do("PUT", path("/quotes/%d", q.ID), e.user, map[string]any{"status": "sent"}), http.StatusOK, &sent)
	if sent.Status != "sent" || sent.Total != "24.00" || len(sent.LineItems) != 1 {
		t.Errorf("after status sent: %+v", sent)
	}
	// New lines replace the old ones and totals follow; tax_rate null is 0.
	var edited quoteJSON
	e.data(e.do("PUT", path("/quotes/%d", q.ID), e.user, map[string]any{"tax_rate": nil, "valid_until": nil,
		"line_items": items([3]any{"B", 1, "5"}, [3]any{"C", 4, "0.99"})}), http.StatusOK, &edited)
	if edited.Total != "8.96" || edited.Tax != "0.00" || len(edited.LineItems) != 2 || edited.ValidUntil != nil || edited.QuoteNumber != q.QuoteNumber {
		t.Errorf("after edit: %+v", edited)
	}

	var list []quoteJSON
	q2 := e.createQuote(d.ID, map[string]any{"line_items": items([3]any{"D", 1, 1})})
	e.data(e.do("GET", path("/deals/%d/quotes", d.ID), e.user, nil), http.StatusOK, &list)
	if len(list) != 2 || list[0].ID != q2.ID || list[1].ID != q.ID {
		t.Errorf("list (newest first) = %+v", list)
	}
	var none []quoteJSON
	other := e.createDeal(map[string]any{"title": "Empty"})
	r := e.do("GET", path("/deals/%d/quotes", other.ID), e.user, nil)
	e.data(r, http.StatusOK, &none)
	if none == nil || len(none) != 0 {
		t.Errorf("empty list = %s", r.Body)
	}

	if r := e.do("DELETE", path("/quotes/%d", q.ID), e.user, nil); r.Status != http.StatusOK {
		t.Fatalf("delete quote: %d %s", r.Status, r.Body)
	}
	wantProblem(t, e.do("GET", path("/quotes/%d", q.ID), e.user, nil), http.StatusNotFound, "not_found")
	// Numbers are never reused.
	q3 := e.createQuote(d.ID, map[string]any{"line_items": items([3]any{"E", 1, 1})})
	if q3.QuoteNumber[len(q3.QuoteNumber)-5:] != "00003" {
		t.Errorf("third number = %q", q3.QuoteNumber)
	}
	// Deleting the deal deletes its quotes.
	e.do("DELETE", path("/deals/%d", d.ID), e.user, nil)
	wantProblem(t, e.do("GET", path("/quotes/%d", q3.ID), e.user, nil), http.StatusNotFound, "not_found")
}

func TestQuoteNumbersUnderConcurrency(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d1 := e.createDeal(map[string]any{"title": "One"})
	d2 := e.createDeal(map[string]any{"title": "Two"})
	const n = 20
	numbers := make([]string, n)
	errs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deal := d1.ID
			if i%2 == 1 {
				deal = d2.ID
			}
			r := e.do("POST", path("/deals/%d/quotes", deal), e.user, map[string]any{"line_items": items([3]any{"x", 1, 1})})
			if r.Status != http.StatusCreated {
				errs[i] = fmt.Sprintf("%d %s", r.Status, r.Body)
				return
			}
			var q struct {
				Data quoteJSON `json:"data"`
			}
			if err := jsonUnmarshal(r.Body, &q); err != nil {
				errs[i] = err.Error()
			}
			numbers[i] = q.Data.QuoteNumber
		}()
	}
	wg.Wait()
	for _, msg := range errs {
		if msg != "" {
			t.Fatalf("create failed: %s", msg)
		}
	}
	sort.Strings(numbers)
	year := time.Now().UTC().Year()
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("Q-%d-%05d", year, i+1)
	}
	if diff := cmp.Diff(want, numbers); diff != "" {
		t.Errorf("numbers (-want +got):\n%s", diff)
	}
}

func TestAcceptingDeclinesOtherAccepted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.createDeal(map[string]any{"title": "Deal"})
	other := e.createDeal(map[string]any{"title": "Other deal"})
	q1 := e.createQuote(d.ID, map[string]any{"status": "accepted", "line_items": items([3]any{"x", 1, 1})})
	q2 := e.createQuote(d.ID, map[string]any{"status": "sent", "line_items": items([3]any{"x", 1, 2})})
	q3 := e.createQuote(d.ID, map[string]any{"status": "draft", "line_items": items([3]any{"x", 1, 3})})
	elsewhere := e.createQuote(other.ID, map[string]any{"status": "accepted", "line_items": items([3]any{"x", 1, 4})})

	e.data(e.do("PUT", path("/quotes/%d", q2.ID), e.user, map[string]any{"status": "accepted"}), http.StatusOK, nil)
	status := func(id int64) string {
		var q quoteJSON
		e.data(e.do("GET", path("/quotes/%d", id), e.user, nil), http.StatusOK, &q)
		return q.Status
	}
	got := []string{status(q1.ID), status(q2.ID), status(q3.ID), status(elsewhere.ID)}
	want := []string{"declined", "accepted", "draft", "accepted"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statuses q1 q2 q3 other-deal (-want +got):\n%s", diff)
	}
	// Creating a quote as accepted declines the current one too.
	q4 := e.createQuote(d.ID, map[string]any{"status": "accepted", "line_items": items([3]any{"x", 1, 5})})
	if s := status(q2.ID); s != "declined" || q4.Status != "accepted" {
		t.Errorf("after accepted create: q2 %s, q4 %s", s, q4.Status)
	}
}

func TestQuoteValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.createDeal(map[string]any{"title": "USD"})
	jpy := e.createDeal(map[string]any{"title": "JPY", "currency": "JPY"})
	q := e.createQuote(d.ID, map[string]any{"line_items": items([3]any{"x", 1, 1})})
	create := path("/deals/%d/quotes", d.ID)
	update := path("/quotes/%d", q.ID)
	one := func(m map[string]any) []map[string]any { return []map[string]any{m} }
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		fields []string
	}{
		{"no line items", "POST", create, map[string]any{}, []string{"line_items"}},
		{"empty line items", "POST", create, map[string]any{"line_items": []any{}}, []string{"line_items"}},
		{"empty line items on update", "PUT", update, map[string]any{"line_items": []any{}}, []string{"line_items"}},
		{"zero quantity", "POST", create, map[string]any{"line_items": items([3]any{"x", 0, 1})}, []string{"line_items[0].quantity"}},
		{"negative quantity", "POST", create, map[string]any{"line_items": items([3]any{"ok", 1, 1}, [3]any{"x", -2, 1})}, []string{"line_items[1].quantity"}},
		{"missing quantity", "POST", create, map[string]any{"line_items": one(map[string]any{"description": "x", "unit_price": 1})}, []string{"line_items[0].quantity"}},
		{"text quantity", "POST", create, map[string]any{"line_items": items([3]any{"x", "lots", 1})}, []string{"line_items[0].quantity"}},
		{"missing description", "POST", create, map[string]any{"line_items": items([3]any{"", 1, 1})}, []string{"line_items[0].description"}},
		{"negative price", "POST", create, map[string]any{"line_items": items([3]any{"x", 1, "-1"})}, []string{"line_items[0].unit_price"}},
		{"price with 3 decimals in USD", "POST", create, map[string]any{"line_items": items([3]any{"x", 1, "1.001"})}, []string{"line_items[0].unit_price"}},
		{"price with decimals in JPY", "POST", path("/deals/%d/quotes", jpy.ID), map[string]any{"line_items": items([3]any{"x", 1, "1.5"})}, []string{"line_items[0].unit_price"}},
		{"missing price", "POST", create, map[string]any{"line_items": one(map[string]any{"description": "x", "quantity": 1})}, []string{"line_items[0].unit_price"}},
		{"tax over 100", "POST", create, map[string]any{"tax_rate": 150, "line_items": items([3]any{"x", 1, 1})}, []string{"tax_rate"}},
		{"negative tax", "POST", create, map[string]any{"tax_rate": -1, "line_items": items([3]any{"x", 1, 1})}, []string{"tax_rate"}},
		{"bad status", "POST", create, map[string]any{"status": "won", "line_items": items([3]any{"x", 1, 1})}, []string{"status"}},
		{"bad status update", "PUT", update, map[string]any{"status": "paid"}, []string{"status"}},
		{"bad valid_until", "POST", create, map[string]any{"valid_until": "soon", "line_items": items([3]any{"x", 1, 1})}, []string{"valid_until"}},
		{"line items not an array", "POST", create, map[string]any{"line_items": "x"}, []string{"line_items"}},
		{"several", "POST", create, map[string]any{"tax_rate": "x", "line_items": items([3]any{"", 0, "y"})},
			[]string{"tax_rate", "line_items[0].description", "line_items[0].quantity", "line_items[0].unit_price"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, e.do(tc.method, tc.path, e.user, tc.body), http.StatusUnprocessableEntity, "validation_failed", tc.fields...)
		})
	}
	t.Run("not found", func(t *testing.T) {
		body := map[string]any{"line_items": items([3]any{"x", 1, 1})}
		wantProblem(t, e.do("POST", "/deals/999999/quotes", e.user, body), http.StatusNotFound, "not_found")
		wantProblem(t, e.do("GET", "/deals/999999/quotes", e.user, nil), http.StatusNotFound, "not_found")
		wantProblem(t, e.do("GET", "/quotes/999999", e.user, nil), http.StatusNotFound, "not_found")
		wantProblem(t, e.do("PUT", "/quotes/999999", e.user, body), http.StatusNotFound, "not_found")
		wantProblem(t, e.do("DELETE", "/quotes/999999", e.user, nil), http.StatusNotFound, "not_found")
		wantProblem(t, e.do("GET", "/quotes/1", "", nil), http.StatusUnauthorized, "unauthenticated")
	})
}
