package contracts

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/contractsapi"
	"github.com/opencrm/crm/pkg/contract/envelope/wiretest"
)

// TestWireTypes keeps the records this package encodes and the bodies it
// decodes equal to the public wire types the OpenAPI document is
// generated from (pkg/contract): same JSON fields, same nullability.
func TestWireTypes(t *testing.T) {
	t.Parallel()
	wiretest.Check(t, []wiretest.Case{
		{Name: "Contract", Service: Contract{}, Wire: contractsapi.Contract{}},
		{Name: "ExecutedFile", Service: ExecutedFile{}, Wire: contractsapi.ExecutedFile{}},
		{Name: "Template", Service: Template{}, Wire: contractsapi.Template{}},
		{Name: "ContractInput", Service: ContractInput{}, Wire: contractsapi.ContractInput{}, NamesOnly: true},
		{Name: "TemplateInput", Service: TemplateInput{}, Wire: contractsapi.TemplateInput{}, NamesOnly: true},
		{Name: "MergeTag", Service: TagInfo{}, Wire: contractsapi.MergeTag{}},
	})
}
