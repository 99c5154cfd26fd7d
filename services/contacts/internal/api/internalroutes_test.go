package api_test

import (
	"strconv"
	"testing"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
)

// TestInternalRoutes: contacts serves exactly the internal routes
// declared for it (contactsapi.InternalRoutes and the shared contracts'),
// the API api/released/internal/contacts.json freezes; its code spells no
// internal path of its own.
func TestInternalRoutes(t *testing.T) {
	t.Parallel()
	internalapitest.Check(t, newEnv(t).h, contactsapi.Service)
	internalapitest.CheckSources(t, "../..")
}

// TestInternalAnswers: each internal route contacts serves answers with
// the shape its declaration (hence its released document) gives.
func TestInternalAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := internalapitest.Calls(t, e.h, secret, contactsapi.Service)
	id := func(m map[string]any) string {
		return strconv.FormatInt(int64(m["data"].(map[string]any)["id"].(float64)), 10)
	}
	company := c.Call(contactsapi.RouteCreateCompany, contactsapi.PathCompanies, map[string]any{"name": "Analytical Engines"})
	contact := c.Call(contactsapi.RouteCreateContact, contactsapi.PathContacts, map[string]any{
		"first_name": "Ada", "last_name": "Lovelace", "email": "ada@engines.test", "company_id": company["data"].(map[string]any)["id"]})
	c.Call(contactsapi.RouteContact, contactsapi.PathContacts+"/"+id(contact), nil)
	c.Call(contactsapi.RouteContactsByID, contactsapi.PathContactsByID+"?ids="+id(contact), nil)
	c.Call(contactsapi.RouteMatchContacts, contactsapi.PathMatchContacts+"?email=ADA@engines.test", nil)
	c.Call(contactsapi.RouteCompany, contactsapi.PathCompanies+"/"+id(company), nil)
	c.Call(contactsapi.RouteMatchCompanies, contactsapi.PathMatchCompanies+"?name=Analytical", nil)
	for _, object := range []string{propertyapi.Contacts, propertyapi.Companies} {
		c.Call(propertyapi.RouteInternal(object), propertyapi.PathInternal+object, nil)
	}
	subject := privacyapi.Subject{Email: "ada@engines.test"}
	c.Call(privacyapi.RouteExport, privacyapi.PathExport, subject)
	c.Call(privacyapi.RouteErase, privacyapi.ErasurePath(7), subject)
}
