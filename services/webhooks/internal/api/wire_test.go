package api

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/envelope/wiretest"
	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

// TestWireTypes keeps the feed's page, which only this edge encodes,
// equal to its public wire type (the records it carries are compared in
// package webhooks).
func TestWireTypes(t *testing.T) {
	t.Parallel()
	wiretest.Check(t, []wiretest.Case{
		{Name: "EventFeed", Service: feedPage{}, Wire: webhooksapi.EventFeed{}},
	})
}
