package dealsapi

import (
	"encoding/json"
	"net/http"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// MergeData is the answer of GET /internal/deals/{id}/merge: what a
// contract's merge tags need about a deal. Company and contact are
// contacts' records as contacts answers them (GET /internal/companies/{id}
// and /internal/contacts/{id}), passed through; null when the deal has
// none or contacts no longer knows it.
type MergeData struct {
	Deal      Deal            `json:"deal"`
	StageName string          `json:"stage_name"`
	OwnerName *string         `json:"owner_name"`
	Company   json.RawMessage `json:"company"`
	Contact   json.RawMessage `json:"contact"`
	Quote     *Quote          `json:"quote"`
}

// InternalRoutes are the routes of deals' internal API, what
// TestInternalRoutes (services/deals/internal/api) proves deals serves
// and api/released/internal/deals.json freezes. The shared routes deals
// serves (a merge's move, privacy) are declared in mergeapi and
// privacyapi.
var InternalRoutes = []route.Internal{
	route.At(RouteCreateDeal, route.Internal{Service: Service, Summary: "Create a deal once per Idempotency-Key",
		Description:    "A deal write as POST /deals takes it (CreateDealRequest is what callers send); the same key with the same body answers the deal it created (Idempotent-Replayed: true), another body is a 409.",
		IdempotencyKey: true, Request: DealInput{}, Status: http.StatusCreated, Response: envelope.Record[Deal]{},
		Problems: []int{http.StatusConflict}}),
	route.At(RouteStage, route.Internal{Service: Service, Summary: "Read a deal stage", Response: envelope.Record[Stage]{}}),
	route.At(RouteDeal, route.Internal{Service: Service, Summary: "Read a deal", Response: envelope.Record[Deal]{}}),
	route.At(RouteMerge, route.Internal{Service: Service, Summary: "Read what a contract's merge tags need about a deal",
		Response: envelope.Record[MergeData]{}}),
	route.At(propertyapi.RouteInternal(propertyapi.Deals), route.Internal{Service: Service, Summary: "List the deals' custom field definitions",
		Response: propertyapi.Definitions{}}),
}
