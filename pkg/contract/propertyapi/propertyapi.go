// Package propertyapi is the public contract of custom-field definitions
// ("properties", as HubSpot names them): the wire types and the routes each
// owning context declares for its objects (contacts and companies, leads,
// deals) under /properties/{object}.
package propertyapi

import (
	"net/http"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/timestamp"
)

// Objects that carry custom fields.
const (
	Contacts  = "contacts"
	Companies = "companies"
	Leads     = "leads"
	Deals     = "deals"
)

// Property is one custom-field definition of an object.
type Property struct {
	Object      string         `json:"object" enum:"contacts,companies,leads,deals" example:"contacts"`
	Name        string         `json:"name" pattern:"^[a-z][a-z0-9_]{0,62}$" description:"The key in custom_fields; immutable." example:"erp_id"`
	Label       string         `json:"label" maxLength:"100" description:"The CSV column header and what a UI shows." example:"ERP id"`
	Type        string         `json:"type" enum:"text,textarea,number,date,datetime,boolean,enum,multi_enum,url,email,phone,user" example:"text"`
	Options     []Option       `json:"options" description:"The values of an enum or multi_enum field, in display order; empty for other types."`
	Required    bool           `json:"required" description:"A record must hold a value when created, and a write may not clear it."`
	Unique      bool           `json:"unique" description:"No two records hold the same value: the field is an external id (id_property of batch upserts and reads)."`
	Description string         `json:"description" maxLength:"1000"`
	Position    int            `json:"position" minimum:"0" description:"Display order; definitions list by position, then name."`
	CreatedAt   timestamp.Time `json:"created_at"`
	UpdatedAt   timestamp.Time `json:"updated_at"`
}

// Option is one value of an enum or multi_enum field. An archived option
// stays on the records that hold it but is refused on new writes.
type Option struct {
	Value    string `json:"value" minLength:"1" maxLength:"100" example:"gold"`
	Label    string `json:"label" maxLength:"100" example:"Gold"`
	Archived bool   `json:"archived,omitempty"`
}

// PropertyInput is the body of POST /properties/{object}.
type PropertyInput struct {
	Name        string   `json:"name" minLength:"1" maxLength:"63" pattern:"^[a-z][a-z0-9_]{0,62}$" example:"erp_id"`
	Label       string   `json:"label" minLength:"1" maxLength:"100" example:"ERP id"`
	Type        string   `json:"type" enum:"text,textarea,number,date,datetime,boolean,enum,multi_enum,url,email,phone,user" example:"text"`
	Options     []Option `json:"options,omitempty" maxItems:"1000"`
	Required    bool     `json:"required,omitempty"`
	Unique      bool     `json:"unique,omitempty" description:"Only for text, email, phone and number fields."`
	Description string   `json:"description,omitempty" maxLength:"1000"`
	Position    int      `json:"position,omitempty" minimum:"0"`
}

// PropertyUpdate is the body of PUT /properties/{object}/{name}: absent
// members keep their value. Options replace the whole list; an option a
// record holds can be archived but not removed.
type PropertyUpdate struct {
	Label       patch.Field[string]   `json:"label,omitzero" minLength:"1" maxLength:"100"`
	Type        patch.Field[string]   `json:"type,omitzero" enum:"text,textarea,number,date,datetime,boolean,enum,multi_enum,url,email,phone,user" description:"Changing the type is refused (409) while any record holds a value."`
	Options     patch.Field[[]Option] `json:"options,omitzero" maxItems:"1000"`
	Required    patch.Field[bool]     `json:"required,omitzero"`
	Unique      patch.Field[bool]     `json:"unique,omitzero"`
	Description patch.Field[string]   `json:"description,omitzero" maxLength:"1000"`
	Position    patch.Field[int]      `json:"position,omitzero" minimum:"0"`
}

// Tag groups the definition routes of every object in the document.
const Tag = "Custom fields"

// Filters are a list's custom-field filters, a family of query parameters
// the declarations cannot name one by one (each installation has its own).
var Filters = route.Param{Name: "cf", Type: "object", Style: "deepObject",
	Desc: "Custom fields filter with cf[<name>]=<value> (an enum takes a comma list of any-of values, " +
		"a multi_enum holds every listed value), cf[<name>][gte]= and [lte]= (number, date, datetime) and " +
		"cf[<name>][empty]=true|false, combined with the other filters; sort_by=cf.<name> sorts by one " +
		"(not textarea or multi_enum). An unknown or unfilterable name is 422 naming the parameter."}

// SortPrefix starts a custom-field sort key, sort_by=cf.<name>. It and
// Sortable live in the contract so the services that accept the key
// (customfield.ParseFilters) and the gateway that lists it in the typed
// document agree on one rule.
const SortPrefix = "cf."

// Sortable tells whether a field of type typ may be a list's sort key:
// textarea and multi_enum have no order a person would expect.
func Sortable(typ string) bool { return typ != "textarea" && typ != "multi_enum" }

// Routes are the definition routes of one object.
type Routes struct {
	List, Create, Get, Update, Delete route.Route
}

// NewRoutes declares the definition routes of object for service: admin
// only (scope admin for integration tokens).
func NewRoutes(service, object string) Routes {
	base := "/properties/" + object
	r := func(method, path, summary string) route.Route {
		return route.Route{Method: method, Path: base + path, Service: service, Auth: route.Admin, Tag: Tag, Summary: summary}
	}
	rs := Routes{
		List:   r(http.MethodGet, "", "List the custom fields of "+object),
		Create: r(http.MethodPost, "", "Define a custom field of "+object),
		Get:    r(http.MethodGet, "/{name}", "Get a custom field of "+object),
		Update: r(http.MethodPut, "/{name}", "Change a custom field of "+object),
		Delete: r(http.MethodDelete, "/{name}", "Delete a custom field of "+object+" and every value it holds"),
	}
	rs.List.Response = envelope.List[Property]{}
	rs.Create.Request, rs.Create.Status, rs.Create.Response, rs.Create.Message = PropertyInput{}, http.StatusCreated, envelope.Record[Property]{}, "Property created"
	rs.Get.Response = envelope.Record[Property]{}
	rs.Update.Request, rs.Update.Response, rs.Update.Message = PropertyUpdate{}, envelope.Record[Property]{}, "Property updated"
	rs.Update.Problems = []int{http.StatusConflict}
	rs.Delete.Response, rs.Delete.Message = envelope.Deleted{}, "Property deleted"
	return rs
}

// All lists the routes in the document's order.
func (rs Routes) All() []route.Route {
	return []route.Route{rs.List, rs.Create, rs.Get, rs.Update, rs.Delete}
}
