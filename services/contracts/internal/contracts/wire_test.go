package contracts

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/contractsapi"
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
		{"Contract", Contract{}, contractsapi.Contract{}, false},
		{"ExecutedFile", ExecutedFile{}, contractsapi.ExecutedFile{}, false},
		{"Template", Template{}, contractsapi.Template{}, false},
		{"ContractInput", ContractInput{}, contractsapi.ContractInput{}, true},
		{"TemplateInput", TemplateInput{}, contractsapi.TemplateInput{}, true},
		{"MergeTag", TagInfo{}, contractsapi.MergeTag{}, false},
	}
	for _, tc := range tests {
		for _, m := range envelope.FieldMismatches(tc.service, tc.wire, tc.namesOnly) {
			t.Errorf("%s: %s", tc.name, m)
		}
	}
}
