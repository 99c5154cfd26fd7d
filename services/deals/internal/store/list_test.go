package store

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/services/deals/internal/deals"
)

// TestDealSortsMapEveryKey: the edge accepts deals.DealSorts, so each must
// have a column here (an unmapped key would sort by the id alone).
func TestDealSortsMapEveryKey(t *testing.T) {
	t.Parallel()
	want := slices.Sorted(slices.Values(deals.DealSorts))
	if diff := cmp.Diff(want, slices.Sorted(slices.Values(dealSorts.Keys()))); diff != "" {
		t.Errorf("sort keys (-want +got):\n%s", diff)
	}
	if !slices.Contains(deals.DealSorts, deals.DefaultDealSort) {
		t.Errorf("default sort %q is not a sort key", deals.DefaultDealSort)
	}
}
