package webhooks

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/envelope/wiretest"
	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

// TestWireTypes keeps the records this package encodes and the bodies it
// decodes equal to the public wire types the OpenAPI document is
// generated from (pkg/contract): same JSON fields, same nullability.
func TestWireTypes(t *testing.T) {
	t.Parallel()
	wiretest.Check(t, []wiretest.Case{
		{Name: "Webhook", Service: Webhook{}, Wire: webhooksapi.Webhook{}},
		{Name: "WebhookInput", Service: Input{}, Wire: webhooksapi.WebhookInput{}, NamesOnly: true},
		{Name: "Delivery", Service: Delivery{}, Wire: webhooksapi.Delivery{}},
		{Name: "Event", Service: Event{}, Wire: webhooksapi.Event{}},
	})
}

func TestParseEventID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"evt_0": 0, "evt_42": 42, "evt_9223372036854775807": 1<<63 - 1} {
		if got, ok := ParseEventID(in); !ok || got != want {
			t.Errorf("ParseEventID(%q) = %d, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "evt_", "42", "evt_-1", "evt_+1", "evt_1x", "evt_99999999999999999999", "ping_1"} {
		if _, ok := ParseEventID(in); ok {
			t.Errorf("ParseEventID(%q) accepted", in)
		}
	}
}
