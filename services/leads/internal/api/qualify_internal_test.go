package api

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/leadsapi"
)

// TestQualifyInputCarriesEveryField converts a body with every field set:
// the core's input must say the same in JSON (the form a saga keeps and a
// 409 qualification_pending shows), so a field added to the contract and
// forgotten here fails.
func TestQualifyInputCarriesEveryField(t *testing.T) {
	t.Parallel()
	name, stage, contact, company := "Compiler licence", int64(2), int64(3), int64(4)
	body := leadsapi.QualifyInput{CreateCompany: true, CreateDeal: true, DealName: &name, DealValue: "1500.5",
		DealStageID: &stage, ContactID: &contact, CompanyID: &company}
	v := reflect.ValueOf(body)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the body leaves %s unset", v.Type().Field(i).Name)
		}
	}
	in, err := qualifyInput(body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(asJSON(t, body), asJSON(t, in)); diff != "" {
		t.Errorf("core input (-body +input):\n%s", diff)
	}
}

// TestAmount: deal_value as a number's literal or a string, never a float;
// anything else is a 422 on deal_value.
func TestAmount(t *testing.T) {
	t.Parallel()
	for _, v := range []any{json.Number("0.1"), " 0.10 ", "0.1"} {
		if d, err := amount(v); err != nil || d.String() != "0.1" {
			t.Errorf("amount(%#v) = %v, %v", v, d, err)
		}
	}
	for _, v := range []any{json.Number("1e3"), "lots", "", true, map[string]any{}, []any{}} {
		if _, err := amount(v); err == nil {
			t.Errorf("amount(%#v) accepted", v)
		}
	}
}

func asJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
