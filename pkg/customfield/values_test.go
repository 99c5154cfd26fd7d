package customfield_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
)

var defs = []customfield.Definition{
	{Name: "erp_id", Type: customfield.Text, Unique: true},
	{Name: "notes", Type: customfield.Textarea},

	{Name: "budget", Type: customfield.Number},
	{Name: "renewal", Type: customfield.Date},
	{Name: "seen_at", Type: customfield.DateTime},
	{Name: "vip", Type: customfield.Boolean},
	{Name: "tier", Type: customfield.Enum, Options: []propertyapi.Option{{Value: "gold"}, {Value: "silver"}, {Value: "bronze", Archived: true}}},
	{Name: "regions", Type: customfield.MultiEnum, Options: []propertyapi.Option{{Value: "emea"}, {Value: "apac"}, {Value: "amer"}}},
	{Name: "site", Type: customfield.URL},
	{Name: "billing", Type: customfield.Email},
	{Name: "hotline", Type: customfield.Phone},
	{Name: "owner", Type: customfield.User},
	{Name: "code", Type: customfield.Text, Required: true},
}

func users(_ context.Context, id int64) (bool, error) { return id == 7, nil }

func input(t *testing.T, s string) customfield.Input {
	t.Helper()
	var in customfield.Input
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		t.Fatal(err)
	}
	return in
}

func fields(err error) []fault.Field {
	f, ok := err.(*fault.Error)
	if !ok {
		return nil
	}
	return f.Fields
}

func TestCheckAcceptsEveryTypeInCanonicalForm(t *testing.T) {
	t.Parallel()
	got, err := customfield.Check(context.Background(), defs, nil, input(t, `{
		"erp_id": "E-1", "notes": "long", "budget": "0012.50", "renewal": "2026-02-28",
		"seen_at": "2026-11-27T10:00:00+01:00", "vip": true, "tier": "gold",
		"regions": ["emea", "apac", "emea"], "site": "https://example.com/x", "billing": "Ap@Example.com",
		"hotline": "+1 (555) 010-2000", "owner": 7, "code": "A"}`), users)
	if err != nil {
		t.Fatal(err)
	}
	want := customfield.Values{
		"erp_id": "E-1", "notes": "long", "budget": "12.5", "renewal": "2026-02-28",
		"seen_at": "2026-11-27T09:00:00.000000Z", "vip": true, "tier": "gold",
		"regions": []string{"emea", "apac"}, "site": "https://example.com/x", "billing": "ap@example.com",
		"hotline": "+1 (555) 010-2000", "owner": int64(7), "code": "A",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

func TestCheckRefusesBadValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     []fault.Field
	}{
		{"unknown field", `{"nope": 1, "code": "A"}`, []fault.Field{{Field: "custom_fields.nope", Message: "is not a custom field of this record type"}}},
		{"wrong type", `{"vip": "maybe", "code": "A"}`, []fault.Field{{Field: "custom_fields.vip", Message: "must be true or false"}}},
		{"too many places", `{"budget": "1.1234567", "code": "A"}`, []fault.Field{{Field: "custom_fields.budget", Message: "must have at most 6 decimal places"}}},
		{"too many digits", `{"budget": 1234567890123456789, "code": "A"}`, []fault.Field{{Field: "custom_fields.budget", Message: "must have at most 18 digits"}}},
		{"float exponent", `{"budget": 1e3, "code": "A"}`, []fault.Field{{Field: "custom_fields.budget", Message: "must be a decimal number such as 1250.5"}}},
		{"impossible date", `{"renewal": "2026-02-30", "code": "A"}`, []fault.Field{{Field: "custom_fields.renewal", Message: "must be a date in the form YYYY-MM-DD"}}},
		{"archived option", `{"tier": "bronze", "code": "A"}`, []fault.Field{{Field: "custom_fields.tier", Message: `option "bronze" is archived`}}},
		{"unknown option", `{"tier": "platinum", "code": "A"}`, []fault.Field{{Field: "custom_fields.tier", Message: "must be one of gold, silver"}}},
		{"unknown multi option", `{"regions": ["emea", "mars"], "code": "A"}`, []fault.Field{{Field: "custom_fields.regions", Message: "must be one of emea, apac, amer"}}},
		{"user that does not exist", `{"owner": 8, "code": "A"}`, []fault.Field{{Field: "custom_fields.owner", Message: "must be the id of an existing user"}}},
		{"not a url", `{"site": "javascript:alert(1)", "code": "A"}`, []fault.Field{{Field: "custom_fields.site", Message: "must be an http or https URL of at most 2048 characters"}}},
		{"not an email", `{"billing": "nobody", "code": "A"}`, []fault.Field{{Field: "custom_fields.billing", Message: "must be a valid email address"}}},
		{"required missing", `{}`, []fault.Field{{Field: "custom_fields.code", Message: "is required"}}},
		{"text too long", `{"erp_id": "` + strings.Repeat("é", 256) + `", "code": "A"}`, []fault.Field{{Field: "custom_fields.erp_id", Message: "must be at most 255 characters"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := customfield.Check(context.Background(), defs, nil, input(t, tt.in), users)
			if diff := cmp.Diff(tt.want, fields(err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckUpdateKeepsClearsAndHonoursHeldArchivedOption(t *testing.T) {
	t.Parallel()
	old := customfield.Values{"tier": "bronze", "budget": "3", "code": "A", "vip": true}
	got, err := customfield.Check(context.Background(), defs, old, input(t, `{"tier": "bronze", "budget": null, "vip": ""}`), users)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(customfield.Values{"tier": "bronze", "code": "A"}, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	_, err = customfield.Check(context.Background(), defs, old, input(t, `{"code": null}`), users)
	if diff := cmp.Diff([]fault.Field{{Field: "custom_fields.code", Message: "is required"}}, fields(err)); diff != "" {
		t.Errorf("clearing a required field (-want +got):\n%s", diff)
	}
}

func TestRenderListsEveryDefinedName(t *testing.T) {
	t.Parallel()
	two := defs[:2]
	got := customfield.Render(two, customfield.Values{"erp_id": "E-1", "gone": "x"})
	if diff := cmp.Diff(map[string]any{"erp_id": "E-1", "notes": nil}, got); diff != "" {
		t.Errorf("render (-want +got):\n%s", diff)
	}
}

func TestNumberIsExact(t *testing.T) {
	t.Parallel()
	d := customfield.Definition{Name: "n", Type: customfield.Number}
	for in, want := range map[string]string{"12.50": "12.5", "-0.000": "0", "000": "0", "123456789012.123456": "123456789012.123456", "-7": "-7", "1.0000000": "1"} {
		got, msg := customfield.Parse(d, in, nil)
		if msg != "" || got != want {
			t.Errorf("Parse(%q) = %v, %q; want %q", in, got, msg, want)
		}
	}
}

func TestRecheckHoldsValuesToTheHeldDefinitions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		old, new customfield.Values
		want     []fault.Field
	}{
		{"nothing held or written", nil, nil, nil},
		{"values as the write checked them", nil, customfield.Values{"code": "A", "owner": int64(8), "regions": []string{"emea"}}, nil},
		{"a held archived option stays", customfield.Values{"tier": "bronze"}, customfield.Values{"tier": "bronze"}, nil},
		{"an archived option newly set", customfield.Values{"tier": "gold"}, customfield.Values{"tier": "bronze"}, []fault.Field{{Field: "custom_fields.tier", Message: `option "bronze" is archived`}}},
		{"a required field cleared is the write's check", customfield.Values{"code": "A"}, customfield.Values{}, nil},
		{"a field deleted meanwhile", nil, customfield.Values{"gone": "x"}, []fault.Field{{Field: "custom_fields.gone", Message: "is not a custom field of this record type"}}},
		{"a field retyped meanwhile", customfield.Values{"vip": "yes"}, customfield.Values{"vip": "yes"}, []fault.Field{{Field: "custom_fields.vip", Message: "must be true or false"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := customfield.Recheck(context.Background(), defs, tt.old, tt.new)
			if diff := cmp.Diff(tt.want, fields(err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
