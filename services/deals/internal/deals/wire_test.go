package deals

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/envelope/wiretest"
)

// TestWireTypes keeps the records this package encodes and the bodies it
// decodes equal to the public wire types the OpenAPI document is
// generated from (pkg/contract): same JSON fields, same nullability.
func TestWireTypes(t *testing.T) {
	t.Parallel()
	wiretest.Check(t, []wiretest.Case{
		{Name: "Stage", Service: Stage{}, Wire: dealsapi.Stage{}},
		{Name: "StageInput", Service: StageWrite{}, Wire: dealsapi.StageInput{}, NamesOnly: true},
		{Name: "Deal", Service: Deal{}, Wire: dealsapi.Deal{}},
		{Name: "DealInput", Service: DealWrite{}, Wire: dealsapi.DealInput{}, NamesOnly: true},
		{Name: "Quote", Service: Quote{}, Wire: dealsapi.Quote{}},
		{Name: "LineItem", Service: LineItem{}, Wire: dealsapi.LineItem{}},
		{Name: "QuoteInput", Service: QuoteWrite{}, Wire: dealsapi.QuoteInput{}, NamesOnly: true},
		{Name: "LineItemInput", Service: LineItemWrite{}, Wire: dealsapi.LineItemInput{}, NamesOnly: true},
	})
}
