package leadsapi

import (
	"net/http"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// InternalRoutes are the routes of leads' internal API, what
// TestInternalRoutes (services/leads/internal/api) proves leads serves
// and api/released/internal/leads.json freezes. The shared routes leads
// serves (a merge's move, privacy) are declared in mergeapi and
// privacyapi.
var InternalRoutes = []route.Internal{
	route.At(RouteCreateLead, route.Internal{Service: Service, Summary: "Create a lead once per Idempotency-Key",
		Description:    "A lead write as POST /leads takes it; the same key with the same body answers the lead it created (Idempotent-Replayed: true), another body is a 409.",
		IdempotencyKey: true, Request: LeadInput{}, Status: http.StatusCreated, Response: envelope.Record[Lead]{},
		Problems: []int{http.StatusConflict}}),
	route.At(RouteBatch, route.Internal{Service: Service, Summary: "Create leads, each once per its own key",
		Description: "Each item's lead is a body POST /internal/leads takes; each result is what that call would have answered, in item order.",
		Request:     BatchRequest{}, Response: envelope.List[BatchResult]{}}),
	route.At(RouteLead, route.Internal{Service: Service, Summary: "Read a lead", Response: envelope.Record[Lead]{}}),
	route.At(RouteDuplicates, route.Internal{Service: Service, Summary: "Name the contact, else the lead, an e-mail address belongs to",
		Description: "data is null when no contact and no lead has the address.",
		Query:       []route.Param{{Name: "email", Type: "string", Desc: "The address.", Required: true, MaxLength: 255}},
		Response:    route.Data[*DuplicateOf]{}}),
	route.At(propertyapi.RouteInternal(propertyapi.Leads), route.Internal{Service: Service, Summary: "List the leads' custom field definitions",
		Response: propertyapi.Definitions{}}),
}
