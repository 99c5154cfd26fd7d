package deals

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/envelope"
)

// TestWireTypes keeps the records this package encodes and the bodies it
// decodes equal to the public wire types the OpenAPI document is
// generated from (pkg/contract): same JSON fields, same nullability.
func TestWireTypes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		service, wire any
		namesOnly     bool
	}{
		{"Stage", Stage{}, dealsapi.Stage{}, false},
		{"StageInput", StageWrite{}, dealsapi.StageInput{}, true},
		{"Deal", Deal{}, dealsapi.Deal{}, false},
		{"DealInput", DealWrite{}, dealsapi.DealInput{}, true},
		{"Quote", Quote{}, dealsapi.Quote{}, false},
		{"LineItem", LineItem{}, dealsapi.LineItem{}, false},
		{"QuoteInput", QuoteWrite{}, dealsapi.QuoteInput{}, true},
		{"LineItemInput", LineItemWrite{}, dealsapi.LineItemInput{}, true},
	}
	for _, tc := range tests {
		for _, m := range envelope.FieldMismatches(tc.service, tc.wire, tc.namesOnly) {
			t.Errorf("%s: %s", tc.name, m)
		}
	}
}
