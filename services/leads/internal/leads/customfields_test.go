package leads

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/customfield"
)

func TestApplyAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	defs := []customfield.Definition{
		{Name: "budget", Type: customfield.Number},
		{Name: "region", Type: customfield.Text, Required: true},
		{Name: "owner", Type: customfield.User},
	}
	users := func(_ context.Context, id int64) (bool, error) { return id == 3, nil }
	raw := func(m map[string]string) map[string]json.RawMessage {
		out := map[string]json.RawMessage{}
		for k, v := range m {
			out[k] = json.RawMessage(v)
		}
		return out
	}
	tests := []struct {
		name   string
		held   map[string]any
		in     Input
		fields []string
		want   map[string]any
	}{
		{"create with values", nil, Input{FirstName: "A", LastName: "B", CustomFields: raw(map[string]string{"budget": `"12.50"`, "region": `"EMEA"`, "owner": "3"})},
			nil, map[string]any{"budget": "12.5", "region": "EMEA", "owner": int64(3)}},
		{"built-in and custom problems together", nil, Input{LastName: "B", CustomFields: raw(map[string]string{"budget": `"x"`, "owner": "9"})},
			[]string{"first_name", "custom_fields.budget", "custom_fields.owner", "custom_fields.region"}, nil},
		{"required on create", nil, Input{FirstName: "A", LastName: "B"}, []string{"custom_fields.region"}, nil},
		{"absent names keep, null clears", map[string]any{"budget": "1", "region": "EMEA"},
			Input{FirstName: "A", LastName: "B", CustomFields: raw(map[string]string{"budget": "null"})}, nil, map[string]any{"region": "EMEA"}},
		{"unknown name", map[string]any{"region": "EMEA"}, Input{FirstName: "A", LastName: "B", CustomFields: raw(map[string]string{"nope": "1"})},
			[]string{"custom_fields.nope"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := Lead{CustomFields: tc.held}
			err := ApplyAll(ctx, &l, tc.in, defs, users)
			if diff := cmp.Diff(tc.fields, fieldsOf(t, err)); diff != "" {
				t.Fatalf("fields (-want +got):\n%s", diff)
			}
			if err == nil {
				if diff := cmp.Diff(tc.want, l.CustomFields); diff != "" {
					t.Errorf("values (-want +got):\n%s", diff)
				}
			}
		})
	}
}
