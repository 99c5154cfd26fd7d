package api

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/envelope/wiretest"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
)

// TestQualifyBodyWireType keeps the qualify body this edge decodes equal to
// the public wire type the OpenAPI document is generated from.
func TestQualifyBodyWireType(t *testing.T) {
	t.Parallel()
	wiretest.Check(t, []wiretest.Case{
		{Name: "QualifyInput", Service: qualifyBody{}, Wire: leadsapi.QualifyInput{}, NamesOnly: true},
	})
}
