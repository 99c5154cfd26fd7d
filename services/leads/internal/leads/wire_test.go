package leads

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/envelope/wiretest"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
)

// TestWireTypes keeps the records this package encodes and the bodies it
// decodes equal to the public wire types the OpenAPI document is
// generated from (pkg/contract): same JSON fields, same nullability.
func TestWireTypes(t *testing.T) {
	t.Parallel()
	wiretest.Check(t, []wiretest.Case{
		{Name: "Lead", Service: Lead{}, Wire: leadsapi.Lead{}},
		{Name: "LeadInput", Service: Input{}, Wire: leadsapi.LeadInput{}, NamesOnly: true},
		{Name: "QualifyInput", Service: QualifyInput{}, Wire: leadsapi.QualifyInput{}, NamesOnly: true},
	})
}
