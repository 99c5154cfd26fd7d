package contacts

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/envelope/wiretest"
)

// TestWireTypes keeps the records this package encodes and the bodies it
// decodes equal to the public wire types the OpenAPI document is
// generated from (pkg/contract): same JSON fields, same nullability.
func TestWireTypes(t *testing.T) {
	t.Parallel()
	wiretest.Check(t, []wiretest.Case{
		{Name: "Contact", Service: Contact{}, Wire: contactsapi.Contact{}},
		{Name: "Company", Service: Company{}, Wire: contactsapi.Company{}},
		{Name: "CompanyMatch", Service: CompanyMatch{}, Wire: contactsapi.CompanyMatch{}},
		{Name: "ContactInput", Service: ContactInput{}, Wire: contactsapi.ContactInput{}, NamesOnly: true},
		{Name: "CompanyInput", Service: CompanyInput{}, Wire: contactsapi.CompanyInput{}, NamesOnly: true},
	})
}

// TestImportEventContract keeps the contacts.imported event as contacts
// publishes it equal to what its consumers read through contactsapi.
func TestImportEventContract(t *testing.T) {
	t.Parallel()
	if ContactsImported != contactsapi.EventContactsImported || ImportEventIDs != contactsapi.MaxContactsByID {
		t.Errorf("contacts publishes %q with %d ids, contactsapi says %q with %d", ContactsImported, ImportEventIDs,
			contactsapi.EventContactsImported, contactsapi.MaxContactsByID)
	}
	wiretest.Check(t, []wiretest.Case{{Name: "Imported", Service: Imported{}, Wire: contactsapi.Imported{}}})
}
