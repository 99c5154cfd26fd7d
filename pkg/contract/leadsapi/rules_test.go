package leadsapi_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/validate"
)

func TestLeadRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		first, email string
		want         []fault.Field
	}{
		{"valid", "Ada", "ada@example.com", nil},
		{"no email is fine", "Ada", "", nil},
		{"name missing", "", "", []fault.Field{{Field: "first_name", Message: "is required"}}},
		{"name at the limit", strings.Repeat("é", validate.MaxName), "", nil},
		{"name over the limit", strings.Repeat("é", validate.MaxName+1), "", []fault.Field{{Field: "first_name", Message: "must be at most 100 characters"}}},
		{"not an address", "Ada", "ada@", []fault.Field{{Field: "email", Message: "must be a valid email address"}}},
	}
	for _, tc := range tests {
		var v validate.Errors
		leadsapi.CheckName(&v, "first_name", tc.first)
		if tc.email != "" {
			leadsapi.CheckEmail(&v, "email", tc.email)
		}
		var got []fault.Field
		var f *fault.Error
		if errors.As(v.Err(), &f) {
			got = f.Fields
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
