package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/envelope/wiretest"
	"github.com/opencrm/crm/services/contacts/internal/api"
)

// TestWireTypes keeps the import's answer, which this edge encodes, equal
// to the public wire type the OpenAPI document is generated from: same
// JSON fields, same nullability.
func TestWireTypes(t *testing.T) {
	t.Parallel()
	wiretest.Check(t, []wiretest.Case{
		{Name: "ImportAnswer", Service: api.ImportAnswer{}, Wire: envelope.ImportResult{}},
	})
}
