package store_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/services/intake/internal/intake"
	"github.com/opencrm/crm/services/intake/internal/store"
)

// TestSortsCoverTheKeys: every public sort key of the admin list has its
// SQL expression, and the store sorts by nothing the list does not offer.
func TestSortsCoverTheKeys(t *testing.T) {
	t.Parallel()
	want := slices.Sorted(slices.Values(intake.SortKeys))
	if diff := cmp.Diff(want, slices.Sorted(slices.Values(store.Sorts.Keys()))); diff != "" {
		t.Errorf("sort keys (-want +got):\n%s", diff)
	}
	if !slices.Contains(intake.SortKeys, intake.DefaultSort) {
		t.Errorf("default sort %q is not a sort key", intake.DefaultSort)
	}
}
