package contactsapi

import (
	"net/http"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// CompanyWithPrimary is the answer of GET /internal/companies/{id}: the
// company and its earliest-created contact (null when it has none), the
// contact merge tags and qualification read.
type CompanyWithPrimary struct {
	Company
	PrimaryContact *Contact `json:"primary_contact"`
}

var idsParam = route.Param{Name: "ids", Type: "string", Required: true,
	Desc: "1 to 1000 comma-separated contact ids."}

// InternalRoutes are the routes of contacts' internal API, what
// TestInternalRoutes (services/contacts/internal/api) proves contacts
// serves and the released document api/released/internal/contacts.json
// freezes. The shared routes contacts serves (privacy) are declared in
// privacyapi.
var InternalRoutes = []route.Internal{
	route.At(RouteCreateContact, route.Internal{Service: Service, Summary: "Create a contact once per Idempotency-Key",
		Description:    "A contact write as POST /contacts takes it (CreateContactRequest is what callers send); the same key with the same body answers the contact it created (Idempotent-Replayed: true), another body is a 409.",
		IdempotencyKey: true, Request: ContactInput{}, Status: http.StatusCreated, Response: route.Data[Contact]{},
		Problems: []int{http.StatusConflict}}),
	route.At(RouteMatchContacts, route.Internal{Service: Service, Summary: "List the contacts with an e-mail address, ignoring case",
		Query:    []route.Param{{Name: "email", Type: "string", Desc: "The address.", Required: true}},
		Response: route.DataList[Contact]{}}),
	route.At(RouteContactsByID, route.Internal{Service: Service, Summary: "Read contacts by id",
		Description: "Those of the ids that exist, by ascending id (a deleted contact is absent): how a consumer of contacts.imported reads the imported records.",
		Query:       []route.Param{idsParam}, Response: route.DataList[Contact]{}}),
	route.At(RouteContact, route.Internal{Service: Service, Summary: "Read a contact", Response: route.Data[Contact]{}}),
	route.At(RouteCreateCompany, route.Internal{Service: Service, Summary: "Create a company once per Idempotency-Key",
		Description:    "A company write as POST /companies takes it (CreateCompanyRequest is what callers send); another body under the key is a 409.",
		IdempotencyKey: true, Request: CompanyInput{}, Status: http.StatusCreated, Response: route.Data[Company]{},
		Problems: []int{http.StatusConflict}}),
	route.At(RouteMatchCompanies, route.Internal{Service: Service, Summary: "List the companies whose name resembles a name, best first",
		Query: []route.Param{{Name: "name", Type: "string", Desc: "The name.", Required: true},
			{Name: "limit", Type: "integer", Desc: "At most this many, default 5.", Min: new(1), Max: new(MaxMatchLimit), Default: 5}},
		Response: route.DataList[CompanyMatch]{}}),
	route.At(RouteCompany, route.Internal{Service: Service, Summary: "Read a company with its primary contact", Response: route.Data[CompanyWithPrimary]{}}),
	route.At(propertyapi.RouteInternal(propertyapi.Contacts), route.Internal{Service: Service, Summary: "List the contacts' custom field definitions",
		Response: propertyapi.Definitions{}}),
	route.At(propertyapi.RouteInternal(propertyapi.Companies), route.Internal{Service: Service, Summary: "List the companies' custom field definitions",
		Response: propertyapi.Definitions{}}),
}
