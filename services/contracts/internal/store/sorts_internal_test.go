package store

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// TestContractSortsCoverTheDomain keeps the store's SQL for every sort key
// the edge accepts: a key without an expression would sort by id alone.
func TestContractSortsCoverTheDomain(t *testing.T) {
	t.Parallel()
	want := slices.Sorted(slices.Values(contracts.ContractSorts))
	got := slices.Sorted(slices.Values(contractSorts.Keys()))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sort keys (-want +got):\n%s", diff)
	}
	if !slices.Contains(contracts.ContractSorts, contracts.DefaultContractSort) {
		t.Errorf("default sort %q is not a sort key", contracts.DefaultContractSort)
	}
}
