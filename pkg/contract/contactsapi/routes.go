package contactsapi

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
const Service = "contacts"

// Resource is the integration-token scope family of contacts and companies.
const Resource = "contacts"

// ContactQuery is the filter of GET /contacts and of the CSV export.
var ContactQuery = route.PageQuery(propertyapi.Filters,
	route.Q("status", "string", "", "active", "inactive"), route.ID("company_id", ""),
	route.AssignedTo, route.Q("source", "string", ""),
	route.DateFrom, route.DateTo,
	route.Scope, route.UpdatedSince, route.AfterID,
	route.Q("sort_by", "string", "Default name; cf.<name> sorts by a custom field.", "name", "email", "phone", "company_name", "status", "created_at", "updated_at"))

var companyQuery = route.PageQuery(propertyapi.Filters, route.UpdatedSince, route.AfterID,
	route.Q("sort_by", "string", "Default name; cf.<name> sorts by a custom field.", "name", "created_at", "updated_at"))

// byExternalID tells the GET of one record by an external id.
const byExternalID = "With id_property, the path's {id} is that field's value: the object's own external id or a unique custom field."

// The public routes of contacts and companies.
var (
	ListContacts = route.Route{Method: http.MethodGet, Path: "/contacts", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Contacts", Summary: "List contacts", Query: ContactQuery, Response: envelope.Page[Contact]{}}
	CreateContact = route.Route{Method: http.MethodPost, Path: "/contacts", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Contacts", Summary: "Create a contact", Request: ContactInput{}, Status: http.StatusCreated,
		Response: envelope.Record[Contact]{}, Message: "Contact created"}
	GetContact = route.Route{Method: http.MethodGet, Path: "/contacts/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Contacts", Summary: "Get a contact", Description: byExternalID, Query: []route.Param{batchapi.IDProperty},
		Response: envelope.Record[Contact]{}}
	UpdateContact = route.Route{Method: http.MethodPut, Path: "/contacts/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Contacts", Summary: "Update a contact", Request: ContactInput{},
		Response: envelope.Record[Contact]{}, Message: "Contact updated"}
	DeleteContact = route.Route{Method: http.MethodDelete, Path: "/contacts/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Contacts", Summary: "Delete a contact", Response: envelope.Deleted{}, Message: "Contact deleted"}
	ExportContacts = route.Route{Method: http.MethodGet, Path: "/contacts/export", Service: Service, Auth: route.Admin,
		Tag: "Contacts", Summary: "Export contacts as CSV (accepts the list filters)", Query: ContactQuery, Answers: route.CSV}
	GetContactTemplate = route.Route{Method: http.MethodGet, Path: "/contacts/template", Service: Service, Auth: route.Admin,
		Tag: "Contacts", Summary: "CSV import template (header line)", Description: envelope.TemplateNote, Answers: route.CSV, Link: true}
	ImportContacts = route.Route{Method: http.MethodPost, Path: "/contacts/import", Service: Service, Auth: route.Admin,
		BodyLimit: route.LimitImport, Tag: "Contacts", Summary: "Import contacts from CSV (≤ 20 MB, 100,000 rows)",
		Description: envelope.ImportNote, Request: envelope.ImportForm{}, Accepts: route.Form,
		Response: ContactImportResult{}, Message: "Imported 98 contacts, skipped 2"}

	ListCompanies = route.Route{Method: http.MethodGet, Path: "/companies", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Companies", Summary: "List companies", Query: companyQuery, Response: envelope.Page[Company]{}}
	CreateCompany = route.Route{Method: http.MethodPost, Path: "/companies", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Companies", Summary: "Create a company", Request: CompanyInput{}, Status: http.StatusCreated,
		Response: envelope.Record[Company]{}, Message: "Company created"}
	GetCompany = route.Route{Method: http.MethodGet, Path: "/companies/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Companies", Summary: "Get a company", Description: byExternalID, Query: []route.Param{batchapi.IDProperty},
		Response: envelope.Record[Company]{}}
	UpdateCompany = route.Route{Method: http.MethodPut, Path: "/companies/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Companies", Summary: "Update a company", Request: CompanyInput{},
		Response: envelope.Record[Company]{}, Message: "Company updated"}
	DeleteCompany = route.Route{Method: http.MethodDelete, Path: "/companies/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Companies", Summary: "Delete a company (its contacts are unlinked)", Response: envelope.Deleted{}, Message: "Company deleted"}

	// ContactActivity is the notes and tasks of a contact.
	ContactActivity = NewActivity(Service, Resource, "Contacts", "/contacts", "contact")

	// ContactBatch and CompanyBatch are the batch writes and reads; a
	// contact's own external id (id_property) is email, a company's is
	// domain.
	ContactBatch = batchapi.NewRoutes[Contact, ContactInput, ContactUpdate](Service, Resource, "Contacts", "/contacts", "contacts")
	CompanyBatch = batchapi.NewRoutes[Company, CompanyInput, CompanyUpdate](Service, Resource, "Companies", "/companies", "companies")

	// ContactProperties and CompanyProperties are the custom-field
	// definitions of contacts and companies (admin only).
	ContactProperties = propertyapi.NewRoutes(Service, propertyapi.Contacts)
	CompanyProperties = propertyapi.NewRoutes(Service, propertyapi.Companies)

	// ContactHistory and CompanyHistory are a record's change history.
	ContactHistory = historyapi.NewRoute(Service, Resource, "Contacts", "/contacts", "contact")
	CompanyHistory = historyapi.NewRoute(Service, Resource, "Companies", "/companies", "company")
)

// Routes are the public routes contacts serves, in the document's order.
var Routes = slices.Concat([]route.Route{
	ListContacts, CreateContact, GetContact, UpdateContact, DeleteContact, ContactHistory,
}, ContactActivity.Routes(), ContactBatch.All(), []route.Route{
	ExportContacts, GetContactTemplate, ImportContacts,
	ListCompanies, CreateCompany, GetCompany, UpdateCompany, DeleteCompany, CompanyHistory,
}, CompanyBatch.All(), ContactProperties.All(), CompanyProperties.All(), MergeRoutes)

// Activity is the notes and tasks routes of one parent (contacts, leads,
// contracts): the same operations, bodies and messages under each, served
// by pkg/activity in the parent's service.
type Activity struct {
	ListNotes, AddNote, DeleteNote                      route.Route
	ListTasks, AddTask, GetTask, UpdateTask, DeleteTask route.Route
}

// NewActivity declares the notes and tasks routes under base ("/leads") of
// a parent named parent ("lead"), served by service and scoped like the
// parent (resource), in the document section tag.
func NewActivity(service, resource, tag, base, parent string) Activity {
	r := func(method, path, summary string) route.Route {
		return route.Route{Method: method, Path: base + path, Service: service, Auth: route.JWT, Resource: resource,
			Tag: tag, Summary: summary}
	}
	a := Activity{
		ListNotes:  r(http.MethodGet, "/{id}/notes", "List the "+parent+"'s notes, newest first"),
		AddNote:    r(http.MethodPost, "/{id}/notes", "Add a note to the "+parent),
		DeleteNote: r(http.MethodDelete, "/{id}/notes/{noteId}", "Delete a note of the "+parent),
		ListTasks:  r(http.MethodGet, "/{id}/tasks", "List the "+parent+"'s tasks"),
		AddTask:    r(http.MethodPost, "/{id}/tasks", "Add a task to the "+parent),
		GetTask:    r(http.MethodGet, "/{id}/tasks/{taskId}", "Get a task of the "+parent),
		UpdateTask: r(http.MethodPut, "/{id}/tasks/{taskId}", "Update a task of the "+parent),
		DeleteTask: r(http.MethodDelete, "/{id}/tasks/{taskId}", "Delete a task of the "+parent),
	}
	a.ListNotes.Response = envelope.List[Note]{}
	a.AddNote.Request, a.AddNote.Status, a.AddNote.Response, a.AddNote.Message = NoteInput{}, http.StatusCreated, envelope.Record[Note]{}, "Note added"
	a.DeleteNote.Response, a.DeleteNote.Message = envelope.Deleted{}, "Note deleted"
	a.ListTasks.Response = envelope.List[Task]{}
	a.AddTask.Request, a.AddTask.Status, a.AddTask.Response, a.AddTask.Message = TaskInput{}, http.StatusCreated, envelope.Record[Task]{}, "Task created"
	a.GetTask.Response = envelope.Record[Task]{}
	a.UpdateTask.Request, a.UpdateTask.Response, a.UpdateTask.Message = TaskInput{}, envelope.Record[Task]{}, "Task updated"
	a.DeleteTask.Response, a.DeleteTask.Message = envelope.Deleted{}, "Task deleted"
	return a
}

// Routes lists the activity routes in the document's order.
func (a Activity) Routes() []route.Route {
	return []route.Route{a.ListNotes, a.AddNote, a.DeleteNote, a.ListTasks, a.AddTask, a.GetTask, a.UpdateTask, a.DeleteTask}
}
