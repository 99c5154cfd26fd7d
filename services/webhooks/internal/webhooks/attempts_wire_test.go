package webhooks

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/envelope/wiretest"
	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

// TestAttemptWireType keeps the delivery log's attempts equal to their
// public wire type (TestWireTypes compares Delivery's own fields only).
func TestAttemptWireType(t *testing.T) {
	t.Parallel()
	wiretest.Check(t, []wiretest.Case{
		{Name: "DeliveryAttempt", Service: DeliveryAttempt{}, Wire: webhooksapi.DeliveryAttempt{}},
	})
}
