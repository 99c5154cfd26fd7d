package deals

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/patch"
)

// fieldsOf is the invalid fields of err (nil for nil); any other error fails t.
func fieldsOf(t *testing.T, err error) []fault.Field {
	t.Helper()
	if err == nil {
		return nil
	}
	var f *fault.Error
	if !errors.As(err, &f) || f.Kind != fault.KindInvalid {
		t.Fatalf("err = %v, want an invalid-input fault", err)
	}
	return f.Fields
}

func set[T any](v T) patch.Field[T] { return patch.Field[T]{Set: true, Value: v} }

func num(text string) patch.Field[dealsapi.Decimal] { return set(dealsapi.Decimal(text)) }

func cleared[T any]() patch.Field[T] { return patch.Field[T]{Set: true, Null: true} }

func invalid(kv ...string) []fault.Field {
	var out []fault.Field
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, fault.Field{Field: kv[i], Message: kv[i+1]})
	}
	return out
}

var (
	open1   = Stage{ID: 1, Name: "Prospecting", Outcome: StatusOpen}
	won4    = Stage{ID: 4, Name: "Closed Won", Outcome: StatusWon}
	acme    = Company{Name: "Acme", UpdatedAt: ptr(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	usd1050 = Deal{Deal: dealsapi.Deal{ID: 9, Title: "FX", Currency: "USD", StageID: open1.ID, Status: StatusOpen},
		Value: NewDealValue(decimal.RequireFromString("10.50"))}
)

func ptr[T any](v T) *T { return &v }

// held is a deal holding custom field values.
var held = Deal{Deal: dealsapi.Deal{ID: 10, Title: "FX", Currency: "USD", StageID: open1.ID, Status: StatusOpen},
	Value: NewDealValue(decimal.Zero), Held: customfield.Values{"erp_id": "X-1", "tier": "silver"}}

// withFields is refs with the deals' custom fields (an enum, a user, a
// unique text and extra) and user 3 known.
func withFields(refs dealRefs, extra ...customfield.Definition) dealRefs {
	refs.defs = append([]customfield.Definition{
		{Name: "tier", Type: customfield.Enum, Options: []propertyapi.Option{{Value: "gold"}, {Value: "silver"}}},
		{Name: "owner", Type: customfield.User},
		{Name: "erp_id", Type: customfield.Text, Unique: true},
	}, extra...)
	refs.users = map[int64]bool{3: true, 42: false}
	return refs
}

// TestDealRecord: a deal write is validated against the deal as it is
// (nil on create) and what it refers to, with every bad field at once.
func TestDealRecord(t *testing.T) {
	t.Parallel()
	created := dealRefs{firstStage: &open1, leadOK: true}
	usd1000 := usd1050
	usd1000.Value = NewDealValue(decimal.RequireFromString("10.00"))
	tests := []struct {
		name string
		in   dealsapi.DealInput
		cur  *Deal
		refs dealRefs
		want func(*DealRecord) // applied to the record expected on success
		bad  []fault.Field
	}{
		{name: "title required", in: dealsapi.DealInput{}, refs: created, bad: invalid("title", "is required")},
		{name: "title too long", in: dealsapi.DealInput{Title: strings.Repeat("x", 256)}, refs: created,
			bad: invalid("title", "must be at most 255 characters")},
		{name: "defaults: USD, zero, the first open stage", in: dealsapi.DealInput{Title: " Deal "}, refs: created,
			want: func(r *DealRecord) { r.Title, r.Currency, r.StageID = "Deal", "USD", open1.ID }},
		{name: "currency normalised", in: dealsapi.DealInput{Title: "x", Currency: set(" jpy "), Value: num("1200")}, refs: created,
			want: func(r *DealRecord) {
				r.Title, r.Currency, r.StageID, r.Value = "x", "JPY", open1.ID, decimal.RequireFromString("1200")
			}},
		{name: "unknown currency", in: dealsapi.DealInput{Title: "x", Currency: set("ABC"), Value: num("1.234")}, refs: created,
			bad: invalid("currency", "must be an ISO 4217 currency code such as USD or EUR")},
		{name: "too many decimals", in: dealsapi.DealInput{Title: "x", Value: num("1.234")}, refs: created,
			bad: invalid("value", "must have at most 2 decimal places in this currency")},
		{name: "yen are whole", in: dealsapi.DealInput{Title: "x", Currency: set("JPY"), Value: num("10.5")}, refs: created,
			bad: invalid("value", "must be a whole number in this currency")},
		{name: "dinar values have 2 places", in: dealsapi.DealInput{Title: "x", Currency: set("KWD"), Value: num("1.255")}, refs: created,
			bad: invalid("value", "must have at most 2 decimal places in this currency")},
		{name: "currency change rechecks the value", in: dealsapi.DealInput{Title: "FX", Currency: set("JPY")}, cur: &usd1050,
			bad: invalid("value", "must be a whole number in this currency")},
		{name: "currency change keeps a whole value", in: dealsapi.DealInput{Title: "FX", Currency: set("JPY")}, cur: &usd1000,
			want: func(r *DealRecord) { *r = usd1000.Record(); r.Currency = "JPY" }},
		{name: "null value is zero", in: dealsapi.DealInput{Title: "FX", Value: cleared[dealsapi.Decimal]()}, cur: &usd1050,
			want: func(r *DealRecord) { *r = usd1050.Record(); r.Value = decimal.Zero }},
		{name: "bad status", in: dealsapi.DealInput{Title: "x", Status: set("pending")}, refs: created,
			bad: invalid("status", "must be one of open, won, lost")},
		{name: "unknown stage", in: dealsapi.DealInput{Title: "x", StageID: set[int64](99)}, refs: dealRefs{leadOK: true},
			bad: invalid("stage_id", "does not exist")},
		{name: "status against the stage's outcome", in: dealsapi.DealInput{Title: "x", StageID: set(won4.ID), Status: set(StatusLost)},
			refs: dealRefs{stage: &won4, leadOK: true},
			bad:  invalid("status", `does not match the outcome of stage "Closed Won" (won)`)},
		{name: "stage cannot be cleared", in: dealsapi.DealInput{Title: "FX", StageID: cleared[int64]()}, cur: &usd1050,
			refs: dealRefs{leadOK: true}, bad: invalid("stage_id", "cannot be cleared")},
		{name: "no open stage", in: dealsapi.DealInput{Title: "x"}, refs: dealRefs{leadOK: true},
			bad: invalid("stage_id", "is required: no open stage exists")},
		{name: "no stage with the status", in: dealsapi.DealInput{Title: "FX", Status: set(StatusWon)}, cur: &usd1050,
			refs: dealRefs{leadOK: true}, bad: invalid("status", "no stage has the outcome won")},
		{name: "status moves to its first stage", in: dealsapi.DealInput{Title: "FX", Status: set(StatusWon)}, cur: &usd1050,
			refs: dealRefs{firstStage: &won4, leadOK: true}, want: func(r *DealRecord) { *r = usd1050.Record(); r.StageID = won4.ID }},
		{name: "unknown references", in: dealsapi.DealInput{Title: "x", AssignedTo: set[int64](5), CompanyID: set[int64](6),
			ContactID: set[int64](7), SourceLeadID: set[int64](8)}, refs: dealRefs{firstStage: &open1},
			bad: invalid("source_lead_id", "does not exist", "assigned_to", "does not exist",
				"company_id", "does not exist", "contact_id", "does not exist")},
		{name: "ids must be positive", in: dealsapi.DealInput{Title: "x", AssignedTo: set[int64](0), CompanyID: set[int64](-1)},
			refs: created, bad: invalid("assigned_to", "must be a positive integer", "company_id", "must be a positive integer")},
		{name: "bad close date", in: dealsapi.DealInput{Title: "x", ExpectedCloseDate: set("31/12/2026")}, refs: created,
			bad: invalid("expected_close_date", "must be a date in the form YYYY-MM-DD")},
		{name: "custom fields are checked with the rest of the body",
			in: dealsapi.DealInput{Title: " ", CustomFields: map[string]json.RawMessage{
				"tier": json.RawMessage(`"platinum"`), "owner": json.RawMessage(`42`), "nope": json.RawMessage(`1`)}},
			refs: withFields(created), bad: invalid("title", "is required",
				"custom_fields.nope", "is not a custom field of this record type",
				"custom_fields.owner", "must be the id of an existing user",
				"custom_fields.tier", "must be one of gold, silver")},
		{name: "custom fields merge into the values the deal holds",
			in: dealsapi.DealInput{Title: "FX", CustomFields: map[string]json.RawMessage{
				"tier": json.RawMessage(`"gold"`), "owner": json.RawMessage(`3`), "erp_id": json.RawMessage(`null`)}},
			cur: &held, refs: withFields(dealRefs{leadOK: true}),
			want: func(r *DealRecord) {
				*r = held.Record()
				r.CustomFields = customfield.Values{"tier": "gold", "owner": int64(3)}
			}},
		{name: "a required custom field on create", in: dealsapi.DealInput{Title: "x"},
			refs: withFields(created, customfield.Definition{Name: "region", Type: customfield.Text, Required: true}),
			bad:  invalid("custom_fields.region", "is required")},
		{name: "a company's name and version", in: dealsapi.DealInput{Title: "x", CompanyID: set[int64](100)},
			refs: dealRefs{firstStage: &open1, company: &acme, companyID: 100, leadOK: true},
			want: func(r *DealRecord) {
				r.Title, r.Currency, r.StageID = "x", "USD", open1.ID
				r.CompanyID, r.CompanyName, r.CompanyUpdatedAt = ptr[int64](100), &acme.Name, acme.UpdatedAt
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec, err := dealRecord(tc.in, tc.cur, tc.refs)
			if diff := cmp.Diff(tc.bad, fieldsOf(t, err)); diff != "" {
				t.Fatalf("invalid fields (-want +got):\n%s", diff)
			}
			if tc.want == nil {
				return
			}
			want := DealRecord{Value: decimal.Zero}
			tc.want(&want)
			if diff := cmp.Diff(want, rec, cmp.Comparer(func(a, b decimal.Decimal) bool { return a.Equal(b) }),
				cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSetCompanyName: the name looked up before the lock gives way to a
// newer version an event stored meanwhile; an older or the same record
// takes the lookup.
func TestSetCompanyName(t *testing.T) {
	t.Parallel()
	jan, feb := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name          string
		stored        *string
		storedVersion *time.Time
		lookup        Company
		wantName      string
		wantVersion   *time.Time
	}{
		{"nothing stored", nil, nil, Company{Name: "Acme", UpdatedAt: &jan}, "Acme", &jan},
		{"older stored", ptr("Old"), &jan, Company{Name: "Acme", UpdatedAt: &feb}, "Acme", &feb},
		{"newer stored by an event", ptr("Acme Corp"), &feb, Company{Name: "Acme", UpdatedAt: &jan}, "Acme Corp", &feb},
		{"lookup without a version", ptr("Acme Corp"), &feb, Company{Name: "Acme"}, "Acme Corp", &feb},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := DealRecord{CompanyName: tc.stored, CompanyUpdatedAt: tc.storedVersion}
			setCompanyName(&rec, &tc.lookup)
			got := struct {
				Name    string
				Version *time.Time
			}{*rec.CompanyName, rec.CompanyUpdatedAt}
			want := struct {
				Name    string
				Version *time.Time
			}{tc.wantName, tc.wantVersion}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("name and version (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadCompany: deals' projection of a contacts company keeps the
// record whole, reads a version only from an RFC 3339 updated_at, and
// makes a missing primary contact null; an unreadable record is a bad
// answer from upstream (502), not an internal error.
func TestReadCompany(t *testing.T) {
	t.Parallel()
	jan := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		raw     string
		want    Company
		wantErr fault.Kind
	}{
		{"full", `{"name":"Acme","updated_at":"2026-01-01T00:00:00Z","primary_contact":{"id":5}}`,
			Company{Name: "Acme", UpdatedAt: &jan, PrimaryContact: json.RawMessage(`{"id":5}`)}, 0},
		{"no version, no primary contact", `{"name":"Acme"}`, Company{Name: "Acme", PrimaryContact: json.RawMessage(`null`)}, 0},
		{"unreadable version", `{"name":"Acme","updated_at":"yesterday","primary_contact":null}`,
			Company{Name: "Acme", PrimaryContact: json.RawMessage(`null`)}, 0},
		{"not an object", `[1]`, Company{}, fault.KindBadUpstream},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := readCompany(100, json.RawMessage(tc.raw))
			if tc.wantErr != 0 {
				if fault.KindOf(err) != tc.wantErr {
					t.Fatalf("err = %v, want kind %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Raw = json.RawMessage(tc.raw)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("company (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStageRecord: a stage needs a name of at most 100 characters, a
// position of at least 1 when given, and an outcome of open, won or lost
// (open when absent or cleared).
func TestStageRecord(t *testing.T) {
	t.Parallel()
	cur := Stage{ID: 4, Name: "Closed Won", Position: 4, Outcome: StatusWon}
	tests := []struct {
		name string
		in   dealsapi.StageInput
		cur  *Stage
		want StageRecord
		bad  []fault.Field
	}{
		{name: "new stage appends, open", in: dealsapi.StageInput{Name: " Demo "}, want: StageRecord{Name: "Demo", Outcome: StatusOpen}},
		{name: "position and outcome", in: dealsapi.StageInput{Name: "Demo", Position: set(2), Outcome: set(StatusLost)},
			want: StageRecord{Name: "Demo", Position: ptr(2), Outcome: StatusLost}},
		{name: "update keeps the outcome", in: dealsapi.StageInput{Name: "Won"}, cur: &cur, want: StageRecord{Name: "Won", Outcome: StatusWon}},
		{name: "cleared outcome is open", in: dealsapi.StageInput{Name: "Won", Outcome: cleared[string]()}, cur: &cur,
			want: StageRecord{Name: "Won", Outcome: StatusOpen}},
		{name: "every bad field", in: dealsapi.StageInput{Position: set(0), Outcome: set("maybe")},
			bad: invalid("name", "is required", "position", "must be an integer of at least 1", "outcome", "must be one of open, won, lost")},
		{name: "name too long", in: dealsapi.StageInput{Name: strings.Repeat("n", 101)}, bad: invalid("name", "must be at most 100 characters")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := stageRecord(tc.in, tc.cur)
			if diff := cmp.Diff(tc.bad, fieldsOf(t, err)); diff != "" {
				t.Fatalf("invalid fields (-want +got):\n%s", diff)
			}
			if tc.bad == nil {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("record (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestQuoteRecord: a quote is validated and its totals computed in the
// deal's currency; an update replaces the lines only when it sends them.
func TestQuoteRecord(t *testing.T) {
	t.Parallel()
	line := func(desc string, qty, price string) dealsapi.LineItemInput {
		return dealsapi.LineItemInput{Description: desc, Quantity: dealsapi.Decimal(qty), UnitPrice: dealsapi.Decimal(price)}
	}
	lines := func(ls ...dealsapi.LineItemInput) []dealsapi.LineItemInput { return ls }
	cur := Quote{Quote: dealsapi.Quote{Status: QuoteSent, Currency: "USD"}, TaxRate: decimal.NewFromInt(10),
		LineItems: []LineItem{{Description: "Seat", Quantity: decimal.NewFromInt(2),
			UnitPrice: Money{decimal.NewFromInt(50), 2}, Amount: Money{decimal.NewFromInt(100), 2}}}}
	tests := []struct {
		name                 string
		in                   dealsapi.QuoteInput
		cur                  *Quote
		currency             string
		status               string
		subtotal, tax, total string
		replace              bool
		bad                  []fault.Field
	}{
		{name: "totals", in: dealsapi.QuoteInput{TaxRate: num("19"), LineItems: lines(line("Seat", "3", "19.99"), line("Setup", "1", "100"))},
			currency: "USD", status: QuoteDraft, subtotal: "159.97", tax: "30.39", total: "190.36", replace: true},
		{name: "yen", in: dealsapi.QuoteInput{TaxRate: num("10"), LineItems: lines(line("Box", "3", "1005"))},
			currency: "JPY", status: QuoteDraft, subtotal: "3015", tax: "302", total: "3317", replace: true},
		{name: "update without lines keeps them", in: dealsapi.QuoteInput{Status: set(QuoteAccepted)}, cur: &cur,
			currency: "USD", status: QuoteAccepted, subtotal: "100", tax: "10", total: "110"},
		{name: "lines required", in: dealsapi.QuoteInput{}, currency: "USD", bad: invalid("line_items", "must hold at least one line item")},
		{name: "empty status", in: dealsapi.QuoteInput{Status: set(""), LineItems: lines(line("x", "1", "1"))}, currency: "USD",
			bad: invalid("status", "must be one of draft, sent, accepted, declined")},
		{name: "every bad line field", in: dealsapi.QuoteInput{LineItems: lines(
			dealsapi.LineItemInput{Quantity: "0", UnitPrice: "1.001"},
			dealsapi.LineItemInput{Description: "x", Quantity: "1.00001"},
		)}, currency: "USD", bad: invalid(
			"line_items[0].description", "is required",
			"line_items[0].quantity", "must be greater than 0",
			"line_items[0].unit_price", "must have at most 2 decimal places in this currency",
			"line_items[1].quantity", "must have at most 4 decimal places",
			"line_items[1].unit_price", "is required")},
		{name: "bad tax rate", in: dealsapi.QuoteInput{TaxRate: num("101"), LineItems: lines(line("x", "1", "1"))}, currency: "USD",
			bad: invalid("tax_rate", "must be a percentage between 0 and 100")},
		{name: "total too large", in: dealsapi.QuoteInput{TaxRate: num("50"), LineItems: lines(line("x", "1", "999999999999999"))}, currency: "USD",
			bad: invalid("line_items", "the quote total must be less than 1000000000000000")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec, replace, err := quoteRecord(tc.in, tc.cur, tc.currency)
			if diff := cmp.Diff(tc.bad, fieldsOf(t, err)); diff != "" {
				t.Fatalf("invalid fields (-want +got):\n%s", diff)
			}
			if tc.bad != nil {
				return
			}
			got := []string{rec.Status, rec.Subtotal.String(), rec.Tax.String(), rec.Total.String()}
			if diff := cmp.Diff([]string{tc.status, tc.subtotal, tc.tax, tc.total}, got); diff != "" || replace != tc.replace {
				t.Errorf("status, subtotal, tax, total (-want +got):\n%s\nreplace = %v, want %v", diff, replace, tc.replace)
			}
		})
	}
}

// teamStore answers TeamMembers; the test calls nothing else of Store.
type teamStore struct {
	Store
	members []int64
}

func (s teamStore) TeamMembers(context.Context, int64, *int64) ([]int64, error) {
	return s.members, nil
}

// TestResolveScope: me is the caller, team the caller's team (an empty
// team matches nothing, not everything), company and no scope restrict
// nothing.
func TestResolveScope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scope   string
		members []int64
		want    []int64
	}{
		{list.ScopeMe, nil, []int64{2}},
		{list.ScopeTeam, []int64{1, 2}, []int64{1, 2}},
		{list.ScopeTeam, nil, []int64{}},
		{list.ScopeCompany, []int64{1, 2}, nil},
		{"", []int64{1, 2}, nil},
	}
	for _, tc := range tests {
		svc := &Service{store: teamStore{members: tc.members}}
		got, err := svc.ResolveScope(context.Background(), tc.scope, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("scope %q (-want +got):\n%s", tc.scope, diff)
		}
	}
}
