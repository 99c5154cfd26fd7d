package customfield_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/customfield"
)

func TestEnumEqualitiesOnly(t *testing.T) {
	t.Parallel()
	enumEq := customfield.Filter{Def: customfield.Definition{Name: "tier", Type: customfield.Enum}, Op: customfield.Eq}
	multiEq := customfield.Filter{Def: customfield.Definition{Name: "tags", Type: customfield.MultiEnum}, Op: customfield.Eq}
	enumEmpty := customfield.Filter{Def: customfield.Definition{Name: "tier", Type: customfield.Enum}, Op: customfield.Empty}
	numberGte := customfield.Filter{Def: customfield.Definition{Name: "score", Type: customfield.Number}, Op: customfield.Gte}
	for _, tc := range []struct {
		name    string
		filters []customfield.Filter
		want    bool
	}{
		{"no filters", nil, true},
		{"enum equality", []customfield.Filter{enumEq}, true},
		{"two enum equalities", []customfield.Filter{enumEq, enumEq}, true},
		{"multi-enum equality", []customfield.Filter{multiEq}, false},
		{"enum empty", []customfield.Filter{enumEq, enumEmpty}, false},
		{"number range", []customfield.Filter{numberGte, enumEq}, false},
	} {
		if got := (customfield.Query{Filters: tc.filters}).EnumEqualitiesOnly(); got != tc.want {
			t.Errorf("%s: EnumEqualitiesOnly() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
