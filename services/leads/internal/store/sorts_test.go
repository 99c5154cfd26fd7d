package store_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/services/leads/internal/leads"
	"github.com/opencrm/crm/services/leads/internal/store"
)

// TestSortsCoverTheKeys: every public sort key has its SQL expression and
// the store sorts by nothing the list does not offer.
func TestSortsCoverTheKeys(t *testing.T) {
	t.Parallel()
	want := slices.Sorted(slices.Values(leads.SortKeys))
	got := slices.Sorted(slices.Values(store.Sorts.Keys()))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sort keys (-want +got):\n%s", diff)
	}
	if !slices.Contains(leads.SortKeys, leads.DefaultSort) {
		t.Errorf("default sort %q is not a sort key", leads.DefaultSort)
	}
}
