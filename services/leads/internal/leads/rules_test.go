package leads

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/patch"
)

// fieldsOf lists the fields of a validation fault ("" for none).
func fieldsOf(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var f *fault.Error
	if !errors.As(err, &f) || f.Kind != fault.KindInvalid {
		t.Fatalf("error %v, want a validation fault", err)
	}
	var names []string
	for _, fe := range f.Fields {
		names = append(names, fe.Field)
	}
	return names
}

// TestApply is a lead's write rules without a server: what is required,
// trimmed, cleared, defaulted and refused.
func TestApply(t *testing.T) {
	t.Parallel()
	users := func(_ context.Context, id int64) (bool, error) { return id == 3, nil }
	names := Input{FirstName: " Jane ", LastName: "Doe"}
	with := func(f func(*Input)) Input { in := names; f(&in); return in }
	tests := []struct {
		name   string
		in     Input
		fields []string
		check  func(t *testing.T, l Lead)
	}{
		{"names trimmed, status defaults", names, nil, func(t *testing.T, l Lead) {
			if l.FirstName != "Jane" || l.LastName != "Doe" || l.Status != StatusNew {
				t.Errorf("lead %+v", l)
			}
		}},
		{"names missing", Input{Email: patch.Of("a@b.example")}, []string{"first_name", "last_name"}, nil},
		{"names blank", Input{FirstName: " ", LastName: ""}, []string{"first_name", "last_name"}, nil},
		{"name too long", with(func(in *Input) { in.FirstName = strings.Repeat("x", 101) }), []string{"first_name"}, nil},
		{"company too long", with(func(in *Input) { in.Company = patch.Of(strings.Repeat("c", 256)) }), []string{"company"}, nil},
		{"bad email", with(func(in *Input) { in.Email = patch.Of("not-an-email") }), []string{"email"}, nil},
		{"bad status", with(func(in *Input) { in.Status = patch.Of("won") }), []string{"status"}, nil},
		{"unknown assignee", with(func(in *Input) { in.AssignedTo = patch.Of[int64](999) }), []string{"assigned_to"}, nil},
		{"assignee not positive", with(func(in *Input) { in.AssignedTo = patch.Of[int64](-1) }), []string{"assigned_to"}, nil},
		{"tags normalised, blank cleared", with(func(in *Input) { in.Tags = patch.Of("vip, hot ,vip"); in.Phone = patch.Of("  ") }), nil,
			func(t *testing.T, l Lead) {
				if l.Tags == nil || *l.Tags != "vip,hot" || l.Phone != nil {
					t.Errorf("tags %v phone %v", l.Tags, l.Phone)
				}
			}},
		{"known assignee", with(func(in *Input) { in.AssignedTo = patch.Of[int64](3) }), nil,
			func(t *testing.T, l Lead) {
				if l.AssignedTo == nil || *l.AssignedTo != 3 {
					t.Errorf("assigned_to %v", l.AssignedTo)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var l Lead
			err := Apply(context.Background(), &l, tc.in, users)
			if diff := cmp.Diff(tc.fields, fieldsOf(t, err)); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
			if tc.check != nil && err == nil {
				tc.check(t, l)
			}
		})
	}
}

// TestQualifyInputRules is the qualification request's own checks and its
// sameness, without a server.
func TestQualifyInputRules(t *testing.T) {
	t.Parallel()
	dec := func(s string) *decimal.Decimal { d := decimal.RequireFromString(s); return &d }
	id := func(v int64) *int64 { return &v }
	company := "Acme"
	withCompany := Lead{Company: &company}
	tests := []struct {
		name   string
		in     QualifyInput
		lead   Lead
		fields []string
	}{
		{"nothing asked", QualifyInput{}, Lead{}, nil},
		{"negative value", QualifyInput{DealValue: dec("-1")}, Lead{}, []string{"deal_value"}},
		{"three places", QualifyInput{DealValue: dec("1.005")}, Lead{}, []string{"deal_value"}},
		{"value at the maximum", QualifyInput{DealValue: dec("1000000000000000")}, Lead{}, []string{"deal_value"}},
		{"ids not positive", QualifyInput{ContactID: id(0), CompanyID: id(-1), DealStageID: id(0)}, Lead{},
			[]string{"contact_id", "company_id", "deal_stage_id"}},
		{"company without a name", QualifyInput{CreateCompany: true}, Lead{}, []string{"create_company"}},
		{"company from the lead's name", QualifyInput{CreateCompany: true}, withCompany, nil},
		{"company from an id", QualifyInput{CreateCompany: true, CompanyID: id(4)}, Lead{}, nil},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.fields, fieldsOf(t, tc.in.validate(tc.lead))); diff != "" {
			t.Errorf("%s: fields (-want +got):\n%s", tc.name, diff)
		}
	}

	name := func(s string) *string { return &s }
	a := QualifyInput{CreateDeal: true, DealName: name(" Big "), DealValue: dec("1500.5")}
	for _, tc := range []struct {
		name string
		b    QualifyInput
		same bool
	}{
		{"names trimmed, amounts as numbers", QualifyInput{CreateDeal: true, DealName: name("Big"), DealValue: dec("1500.50")}, true},
		{"other amount", QualifyInput{CreateDeal: true, DealName: name("Big"), DealValue: dec("1500")}, false},
		{"no deal", QualifyInput{DealName: name("Big"), DealValue: dec("1500.5")}, false},
	} {
		if got := a.same(tc.b); got != tc.same {
			t.Errorf("%s: same = %v, want %v", tc.name, got, tc.same)
		}
	}
}

// TestQualifyConflictsCarryTheirIDs: the 409s of qualification carry what
// a client needs to act.
func TestQualifyConflictsCarryTheirIDs(t *testing.T) {
	t.Parallel()
	c, co, d := int64(1), int64(2), int64(3)
	var f *fault.Error
	if !errors.As(AlreadyQualified(Lead{ContactID: &c, CompanyID: &co, DealID: &d}), &f) || f.Kind != fault.KindConflict {
		t.Fatalf("AlreadyQualified is not a conflict fault")
	}
	if diff := cmp.Diff(map[string]any{"contact_id": &c, "company_id": &co, "deal_id": &d}, f.Extra); diff != "" {
		t.Errorf("extras (-want +got):\n%s", diff)
	}
	if !errors.As(QualificationPending(QualifyInput{CreateDeal: true}), &f) || f.Code != "qualification_pending" {
		t.Fatalf("QualificationPending: %v", f)
	}
}

// TestMatchTerm: a blank term finds nothing without asking, an overlong
// one is refused on its field, no match is an empty list.
func TestMatchTerm(t *testing.T) {
	t.Parallel()
	asked := 0
	find := func(_ context.Context, term string) ([]json.RawMessage, error) {
		asked++
		if term != "acme" {
			t.Errorf("term %q, want it trimmed", term)
		}
		return nil, nil
	}
	got, err := match(context.Background(), "company", "  ", find)
	if err != nil || len(got) != 0 || got == nil || asked != 0 {
		t.Errorf("blank: %v %v, asked %d", got, err, asked)
	}
	_, err = match(context.Background(), "company", strings.Repeat("x", 256), find)
	if diff := cmp.Diff([]string{"company"}, fieldsOf(t, err)); diff != "" {
		t.Errorf("overlong (-want +got):\n%s", diff)
	}
	got, err = match(context.Background(), "company", " acme ", find)
	if err != nil || got == nil || len(got) != 0 || asked != 1 {
		t.Errorf("no match: %v %v, asked %d", got, err, asked)
	}
}
