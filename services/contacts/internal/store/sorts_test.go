package store

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/list/listsql"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// TestSortKeys keeps the SQL of each list's sorts in step with the keys
// the domain offers (and the edge parses): a key without an expression
// would sort by id alone, an expression without a key is dead.
func TestSortKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		sorts listsql.Sorts
		keys  []string
	}{
		{"contacts", contactSorts, contacts.ContactSorts},
		{"companies", companySorts, contacts.CompanySorts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(slices.Sorted(slices.Values(tt.keys)), slices.Sorted(slices.Values(tt.sorts.Keys()))); diff != "" {
				t.Errorf("sort keys (-domain +store):\n%s", diff)
			}
			if !slices.Contains(tt.keys, contacts.DefaultSort) {
				t.Errorf("default sort %q is not a key", contacts.DefaultSort)
			}
		})
	}
}
