package contacts

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
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
		{"Contact", Contact{}, contactsapi.Contact{}, false},
		{"Company", Company{}, contactsapi.Company{}, false},
		{"CompanyMatch", CompanyMatch{}, contactsapi.CompanyMatch{}, false},
		{"ContactInput", ContactInput{}, contactsapi.ContactInput{}, true},
		{"CompanyInput", CompanyInput{}, contactsapi.CompanyInput{}, true},
		{"ImportAnswer", ImportAnswer{}, envelope.ImportResult{}, false},
	}
	for _, tc := range tests {
		for _, m := range envelope.FieldMismatches(tc.service, tc.wire, tc.namesOnly) {
			t.Errorf("%s: %s", tc.name, m)
		}
	}
}
