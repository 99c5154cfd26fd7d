package api_test

import (
	"strconv"
	"testing"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/internalapi"
	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/contract/route"
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
	answer := func(r route.Internal, url string, body any) map[string]any {
		t.Helper()
		return internalapitest.Answer(t, e.h, secret, r, url, body)
	}
	routes := map[string]route.Internal{}
	for _, r := range internalapi.Of(contactsapi.Service) {
		routes[r.Pattern()] = r
	}
	id := func(m map[string]any) string {
		return strconv.FormatInt(int64(m["data"].(map[string]any)["id"].(float64)), 10)
	}
	company := answer(routes[contactsapi.RouteCreateCompany], contactsapi.PathCompanies, map[string]any{"name": "Analytical Engines"})
	contact := answer(routes[contactsapi.RouteCreateContact], contactsapi.PathContacts, map[string]any{
		"first_name": "Ada", "last_name": "Lovelace", "email": "ada@engines.test", "company_id": company["data"].(map[string]any)["id"]})
	answer(routes[contactsapi.RouteContact], contactsapi.PathContacts+"/"+id(contact), nil)
	answer(routes[contactsapi.RouteContactsByID], contactsapi.PathContactsByID+"?ids="+id(contact), nil)
	answer(routes[contactsapi.RouteMatchContacts], contactsapi.PathMatchContacts+"?email=ADA@engines.test", nil)
	answer(routes[contactsapi.RouteCompany], contactsapi.PathCompanies+"/"+id(company), nil)
	answer(routes[contactsapi.RouteMatchCompanies], contactsapi.PathMatchCompanies+"?name=Analytical", nil)
	for _, object := range []string{propertyapi.Contacts, propertyapi.Companies} {
		answer(routes[propertyapi.RouteInternal(object)], propertyapi.PathInternal+object, nil)
	}
	subject := privacyapi.Subject{Email: "ada@engines.test"}
	answer(routes[privacyapi.RouteExport], privacyapi.PathExport, subject)
	answer(routes[privacyapi.RouteErase], privacyapi.ErasurePath(7), subject)
	if len(routes) != 11 {
		t.Errorf("%d internal routes declared for contacts, this test calls 11: call the new ones", len(routes))
	}
}
