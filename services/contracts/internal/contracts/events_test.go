package contracts

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

// TestEventTypes keeps the types this context publishes equal to the ones
// an integration subscribes to by name (the webhooks context relays them
// as they are).
func TestEventTypes(t *testing.T) {
	t.Parallel()
	got := []string{EventCreated, EventUpdated, EventDeleted, EventStatusChanged, EventExecuted}
	want := []string{webhooksapi.ContractCreated, webhooksapi.ContractUpdated, webhooksapi.ContractDeleted,
		webhooksapi.ContractStatusChanged, webhooksapi.ContractExecuted}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event types (-webhooks +contracts):\n%s", diff)
	}
}
