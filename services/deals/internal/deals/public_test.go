package deals

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/timestamp"
)

// allSet fails t for each field of the struct v left zero: a field added
// to the contract must be set in these tests, so that a conversion which
// forgets it fails.
func allSet(t *testing.T, what string, v any) {
	t.Helper()
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		if rv.Field(i).IsZero() {
			t.Errorf("%s leaves %s unset", what, rv.Type().Field(i).Name)
		}
	}
}

// roundTrip is v encoded and decoded again, as a client reads it.
func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back T
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back
}

// TestPublic: a deal and a quote with every field set are sent with every
// field, the exact amounts rendered as their strings and decimal literals,
// and read back by a client as they were sent.
func TestPublic(t *testing.T) {
	t.Parallel()
	at := timestamp.Of(time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC))
	later := timestamp.Of(at.Add(time.Hour))
	str := func(s string) *string { return &s }
	id := func(n int64) *int64 { return &n }

	d := Deal{Deal: dealsapi.Deal{ID: 12, Title: "Batcave retrofit", Currency: "USD", StageID: 1,
		StageName: "Lead", Status: StatusOpen, CompanyID: id(7), CompanyName: str("Wayne Enterprises"),
		ContactID: id(8), ExpectedCloseDate: str("2026-12-31"), AssignedTo: id(3), AssignedToName: str("Alfred"),
		SourceLeadID: id(17), CustomFields: map[string]any{"erp_id": "X-1", "tier": nil}, CreatedAt: at, UpdatedAt: later},
		Value: NewDealValue(decimal.RequireFromString("250000.5")), CompanyUpdatedAt: &at.Time}
	sent := d.Public()
	allSet(t, "the deal sent", sent)
	want := d.Deal
	want.Value = "250000.50"
	if diff := cmp.Diff(want, sent); diff != "" {
		t.Errorf("deal sent (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(sent, roundTrip(t, sent)); diff != "" {
		t.Errorf("deal read back (-sent +read):\n%s", diff)
	}

	line := LineItem{Description: "Consulting day", Quantity: decimal.RequireFromString("1.5"),
		UnitPrice: NewMoney(decimal.RequireFromString("1200"), "KWD"), Amount: NewMoney(decimal.RequireFromString("1800"), "KWD")}
	q := Quote{Quote: dealsapi.Quote{ID: 4, DealID: 12, QuoteNumber: "Q-2026-0004", Status: QuoteDraft, Currency: "KWD",
		ValidUntil: str("2026-12-31"), CreatedAt: at, UpdatedAt: later},
		LineItems: []LineItem{line}, TaxRate: decimal.RequireFromString("17.5"),
		Subtotal: NewMoney(decimal.RequireFromString("1800"), "KWD"), Tax: NewMoney(decimal.RequireFromString("315"), "KWD"),
		Total: NewMoney(decimal.RequireFromString("2115"), "KWD")}
	qs := q.Public()
	allSet(t, "the quote sent", qs)
	for _, l := range qs.LineItems {
		allSet(t, "the line sent", l)
	}
	wantQ := q.Quote
	wantQ.LineItems = []dealsapi.LineItem{{Description: "Consulting day", Quantity: "1.5", UnitPrice: "1200.000", Amount: "1800.000"}}
	wantQ.Subtotal, wantQ.TaxRate, wantQ.Tax, wantQ.Total = "1800.000", "17.5", "315.000", "2115.000"
	if diff := cmp.Diff(wantQ, qs); diff != "" {
		t.Errorf("quote sent (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(qs, roundTrip(t, qs)); diff != "" {
		t.Errorf("quote read back (-sent +read):\n%s", diff)
	}
	if b, _ := json.Marshal(qs.LineItems[0]); string(b) != `{"description":"Consulting day","quantity":1.5,"unit_price":"1200.000","amount":"1800.000"}` {
		t.Errorf("line sent as %s", b)
	}
}
