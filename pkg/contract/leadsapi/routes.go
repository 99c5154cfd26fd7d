package leadsapi

import (
	"net/http"
	"slices"

	"github.com/opencrm/crm/pkg/contract/batchapi"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// Service is the context's name: it keys the gateway's upstream addresses.
const Service = "leads"

// Resource is the integration-token scope family of leads.
const Resource = "leads"

// LeadQuery is the filter of GET /leads and of the CSV export.
var LeadQuery = route.PageQuery(propertyapi.Filters,
	route.Q("status", "string", "", "new", "contacted", "qualified", "disqualified"), route.Q("source", "string", ""),
	route.AssignedTo,
	route.DateFrom, route.DateTo,
	route.Scope, route.UpdatedSince, route.AfterID,
	route.Q("sort_by", "string", "Default name; cf.<name> sorts by a custom field.", "name", "email", "company_name", "status", "source", "assigned_to_name", "created_at", "updated_at"))

// byExternalID tells the GET of one lead by an external id.
const byExternalID = "With id_property, the path's {id} is that field's value: a unique custom field of leads."

// The public routes of leads.
var (
	ListLeads = route.Route{Method: http.MethodGet, Path: "/leads", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Leads", Summary: "List leads", Query: LeadQuery, Response: envelope.Page[Lead]{}}
	CreateLead = route.Route{Method: http.MethodPost, Path: "/leads", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Leads", Summary: "Create a lead", Request: LeadInput{}, Status: http.StatusCreated,
		Response: envelope.Record[Lead]{}, Message: "Lead created"}
	GetLead = route.Route{Method: http.MethodGet, Path: "/leads/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Leads", Summary: "Get a lead", Description: byExternalID, Query: []route.Param{batchapi.IDProperty},
		Response: envelope.Record[Lead]{}}
	UpdateLead = route.Route{Method: http.MethodPut, Path: "/leads/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Leads", Summary: "Update a lead", Request: LeadInput{}, Response: envelope.Record[Lead]{}, Message: "Lead updated"}
	DeleteLead = route.Route{Method: http.MethodDelete, Path: "/leads/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Leads", Summary: "Delete a lead", Response: envelope.Deleted{}, Message: "Lead deleted"}
	QualifyLead = route.Route{Method: http.MethodPost, Path: "/leads/{id}/qualify", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Leads", Summary: "Qualify a lead into a contact, optionally a company and a deal",
		Request: QualifyInput{}, OptionalBody: true, Response: Qualified{}, Message: "Lead qualified",
		Problems: []int{http.StatusConflict}}
	DisqualifyLead = route.Route{Method: http.MethodPut, Path: "/leads/{id}/disqualify", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Leads", Summary: "Disqualify a lead with an optional reason",
		Request: DisqualifyInput{}, OptionalBody: true, Response: envelope.Record[Lead]{}, Message: "Lead disqualified"}
	ExportLeads = route.Route{Method: http.MethodGet, Path: "/leads/export", Service: Service, Auth: route.Admin,
		Tag: "Leads", Summary: "Export leads as CSV (accepts the list filters)", Query: LeadQuery, Answers: route.CSV}
	GetLeadTemplate = route.Route{Method: http.MethodGet, Path: "/leads/template", Service: Service, Auth: route.Admin,
		Tag: "Leads", Summary: "CSV import template (header line)", Description: envelope.TemplateNote, Answers: route.CSV, Link: true}
	MatchCompany = route.Route{Method: http.MethodGet, Path: "/leads/match-company", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Leads", Summary: "Existing companies matching a company name, best first",
		Query:    []route.Param{{Name: "company", Type: "string", Desc: "Company name.", Required: true}},
		Response: envelope.List[contactsapi.CompanyMatch]{}}
	MatchContact = route.Route{Method: http.MethodGet, Path: "/leads/match-contact", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Leads", Summary: "Existing contacts matching an email",
		Query:    []route.Param{{Name: "email", Type: "string", Desc: "Email address.", Required: true}},
		Response: envelope.List[contactsapi.Contact]{}}
	ImportLeads = route.Route{Method: http.MethodPost, Path: "/leads/import", Service: Service, Auth: route.JWT, Resource: Resource,
		BodyLimit: route.LimitImport, Tag: "Leads", Summary: "Import leads from CSV (≤ 20 MB, 100,000 rows)",
		Description: envelope.ImportNote, Request: envelope.ImportForm{}, Accepts: route.Form,
		Response: LeadImportResult{}, Message: "Imported 98 leads, skipped 2"}

	// LeadHistory is a lead's change history (its notes' and tasks'
	// changes included), as visible as the lead.
	LeadHistory = historyapi.NewRoute(Service, Resource, "Leads", "/leads", "lead")

	// LeadActivity is the notes and tasks of a lead.
	LeadActivity = contactsapi.NewActivity(Service, Resource, "Leads", "/leads", "lead")

	// LeadBatch is the batch writes and reads of leads.
	LeadBatch = batchapi.NewRoutes[Lead, LeadInput, LeadUpdate](Service, Resource, "Leads", "/leads", "leads")

	// LeadProperties is the custom-field definitions of leads.
	LeadProperties = propertyapi.NewRoutes(Service, propertyapi.Leads)
)

// Routes are the public routes leads serves, in the document's order.
var Routes = slices.Concat([]route.Route{
	ListLeads, CreateLead, GetLead, UpdateLead, DeleteLead, QualifyLead, DisqualifyLead, LeadHistory,
}, LeadActivity.Routes(), LeadBatch.All(), []route.Route{
	ExportLeads, GetLeadTemplate, MatchCompany, MatchContact, ImportLeads,
}, LeadProperties.All())
