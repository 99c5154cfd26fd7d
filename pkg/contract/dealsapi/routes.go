package dealsapi

import (
	"net/http"
	"slices"

	"github.com/opencrm/crm/pkg/contract/batchapi"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// Service is the context's name: it keys the gateway's upstream addresses.
const Service = "deals"

// Resource is the integration-token scope family of deals, their stages
// and quotes.
const Resource = "deals"

var dealQuery = route.PageQuery(propertyapi.Filters,
	route.Q("status", "string", "One status or a comma-separated list of open, won, lost."),
	route.ID("stage_id", ""), route.ID("company_id", ""), route.ID("contact_id", ""),
	route.AssignedTo, route.Scope, route.UpdatedSince, route.AfterID,
	route.Q("sort_by", "string", "Default created_at; cf.<name> sorts by a custom field.", "title", "value", "stage", "expected_close_date", "created_at", "updated_at"))

// byExternalID tells the GET of one deal by an external id.
const byExternalID = "With id_property, the path's {id} is that field's value: a unique custom field of deals."

// The public routes of deals: the pipeline's stages (changed by admins),
// deals and their quotes.
var (
	ListStages = route.Route{Method: http.MethodGet, Path: "/deal-stages", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Deals", Summary: "List deal stages in order", Response: envelope.List[Stage]{}}
	GetStage = route.Route{Method: http.MethodGet, Path: "/deal-stages/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Deals", Summary: "Get a deal stage", Response: envelope.Record[Stage]{}}
	CreateStage = route.Route{Method: http.MethodPost, Path: "/deal-stages", Service: Service, Auth: route.Admin,
		Tag: "Deals", Summary: "Add a deal stage", Request: StageInput{}, Status: http.StatusCreated,
		Response: envelope.Record[Stage]{}, Message: "Deal stage created"}
	UpdateStage = route.Route{Method: http.MethodPut, Path: "/deal-stages/{id}", Service: Service, Auth: route.Admin,
		Tag: "Deals", Summary: "Rename or reorder a deal stage", Request: StageInput{},
		Response: envelope.Record[Stage]{}, Message: "Deal stage updated", Problems: []int{http.StatusConflict}}
	DeleteStage = route.Route{Method: http.MethodDelete, Path: "/deal-stages/{id}", Service: Service, Auth: route.Admin,
		Tag: "Deals", Summary: "Delete a deal stage", Response: envelope.Deleted{}, Message: "Deal stage deleted",
		Problems: []int{http.StatusConflict}}

	ListDeals = route.Route{Method: http.MethodGet, Path: "/deals", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Deals", Summary: "List deals", Query: dealQuery, Response: envelope.Page[Deal]{}}
	CreateDeal = route.Route{Method: http.MethodPost, Path: "/deals", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Deals", Summary: "Create a deal", Request: DealInput{}, Status: http.StatusCreated,
		Response: envelope.Record[Deal]{}, Message: "Deal created"}
	GetDeal = route.Route{Method: http.MethodGet, Path: "/deals/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Deals", Summary: "Get a deal", Description: byExternalID, Query: []route.Param{batchapi.IDProperty},
		Response: envelope.Record[Deal]{}}
	UpdateDeal = route.Route{Method: http.MethodPut, Path: "/deals/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Deals", Summary: "Update a deal", Request: DealInput{}, Response: envelope.Record[Deal]{}, Message: "Deal updated"}
	DeleteDeal = route.Route{Method: http.MethodDelete, Path: "/deals/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Deals", Summary: "Delete a deal", Response: envelope.Deleted{}, Message: "Deal deleted"}

	ListQuotes = route.Route{Method: http.MethodGet, Path: "/deals/{id}/quotes", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Deals", Summary: "List the deal's quotes", Response: envelope.List[Quote]{}}
	CreateQuote = route.Route{Method: http.MethodPost, Path: "/deals/{id}/quotes", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Deals", Summary: "Create a quote (totals computed in decimal)", Request: QuoteInput{}, Status: http.StatusCreated,
		Response: envelope.Record[Quote]{}, Message: "Quote created"}
	GetQuote = route.Route{Method: http.MethodGet, Path: "/quotes/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Deals", Summary: "Get a quote", Response: envelope.Record[Quote]{}}
	UpdateQuote = route.Route{Method: http.MethodPut, Path: "/quotes/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Deals", Summary: "Update a quote", Request: QuoteInput{}, Response: envelope.Record[Quote]{}, Message: "Quote updated"}
	DeleteQuote = route.Route{Method: http.MethodDelete, Path: "/quotes/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Deals", Summary: "Delete a quote", Response: envelope.Deleted{}, Message: "Quote deleted"}

	// DealBatch is the batch writes and reads of deals.
	DealBatch = batchapi.NewRoutes[Deal, DealInput, DealUpdate](Service, Resource, "Deals", "/deals", "deals")

	// DealProperties is the custom-field definitions of deals.
	DealProperties = propertyapi.NewRoutes(Service, propertyapi.Deals)

	// DealHistory is a deal's change history, its quotes' included (a stage
	// move is a change of its stage_id). Quotes have no route of their
	// own: an admin reads a quote's through historyapi.Admin.
	DealHistory = historyapi.NewRoute(Service, Resource, "Deals", "/deals", "deal")
)

// Routes are the public routes deals serves, in the document's order.
var Routes = slices.Concat([]route.Route{
	ListStages, GetStage, CreateStage, UpdateStage, DeleteStage,
	ListDeals, CreateDeal, GetDeal, UpdateDeal, DeleteDeal, DealHistory,
}, DealBatch.All(), []route.Route{
	ListQuotes, CreateQuote, GetQuote, UpdateQuote, DeleteQuote,
}, DealProperties.All())
