package contactsapi

import (
	"encoding/json"

	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/timestamp"
)

// Contact is a person of the CRM, as GET /contacts/{id} answers it.
// Optional text fields are null when empty.
type Contact struct {
	ID             int64          `json:"id" minimum:"1" example:"42"`
	FirstName      string         `json:"first_name" maxLength:"100" example:"Ada"`
	LastName       string         `json:"last_name" maxLength:"100" example:"Lovelace"`
	Email          *string        `json:"email" format:"email" maxLength:"255" example:"ada@example.com"`
	Phone          *string        `json:"phone" maxLength:"255" example:"+44 20 7946 0018"`
	Mobile         *string        `json:"mobile" maxLength:"255"`
	JobTitle       *string        `json:"job_title" maxLength:"255" example:"Analyst"`
	CompanyID      *int64         `json:"company_id" minimum:"1" example:"7"`
	CompanyName    *string        `json:"company_name" readOnly:"true" example:"Analytical Engines Ltd"`
	AddressStreet  *string        `json:"address_street" maxLength:"255"`
	AddressCity    *string        `json:"address_city" maxLength:"255" example:"London"`
	AddressState   *string        `json:"address_state" maxLength:"255"`
	AddressZip     *string        `json:"address_zip" maxLength:"255"`
	AddressCountry *string        `json:"address_country" maxLength:"255" example:"GB"`
	Notes          *string        `json:"notes" maxLength:"100000"`
	Tags           *string        `json:"tags" maxLength:"255" description:"Comma-separated." example:"vip,partner"`
	Status         string         `json:"status" enum:"active,inactive" example:"active"`
	Source         *string        `json:"source" maxLength:"255" example:"referral"`
	AssignedTo     *int64         `json:"assigned_to" minimum:"1" description:"User id of the owner." example:"3"`
	CustomFields   map[string]any `json:"custom_fields" description:"This installation's custom fields (GET /properties/contacts): every defined name, null where empty." customFields:"contacts"`
	CreatedAt      timestamp.Time `json:"created_at"`
	UpdatedAt      timestamp.Time `json:"updated_at"`
}

// ContactInput is the body of POST /contacts and PUT /contacts/{id}. The
// names are required on both; an absent optional field is left unchanged
// on update, null or "" clears it.
type ContactInput struct {
	FirstName      string                     `json:"first_name" minLength:"1" maxLength:"100" example:"Ada"`
	LastName       string                     `json:"last_name" minLength:"1" maxLength:"100" example:"Lovelace"`
	Email          patch.Field[string]        `json:"email,omitzero" nullable:"true" maxLength:"255" description:"A valid address, or empty to clear." example:"ada@example.com"`
	Phone          patch.Field[string]        `json:"phone,omitzero" nullable:"true" maxLength:"255"`
	Mobile         patch.Field[string]        `json:"mobile,omitzero" nullable:"true" maxLength:"255"`
	JobTitle       patch.Field[string]        `json:"job_title,omitzero" nullable:"true" maxLength:"255"`
	CompanyID      patch.Field[int64]         `json:"company_id,omitzero" nullable:"true" minimum:"1"`
	AddressStreet  patch.Field[string]        `json:"address_street,omitzero" nullable:"true" maxLength:"255"`
	AddressCity    patch.Field[string]        `json:"address_city,omitzero" nullable:"true" maxLength:"255"`
	AddressState   patch.Field[string]        `json:"address_state,omitzero" nullable:"true" maxLength:"255"`
	AddressZip     patch.Field[string]        `json:"address_zip,omitzero" nullable:"true" maxLength:"255"`
	AddressCountry patch.Field[string]        `json:"address_country,omitzero" nullable:"true" maxLength:"255"`
	Notes          patch.Field[string]        `json:"notes,omitzero" nullable:"true" maxLength:"100000"`
	Tags           patch.Field[string]        `json:"tags,omitzero" nullable:"true" maxLength:"255"`
	Status         patch.Field[string]        `json:"status,omitzero" enum:"active,inactive"`
	Source         patch.Field[string]        `json:"source,omitzero" nullable:"true" maxLength:"255"`
	AssignedTo     patch.Field[int64]         `json:"assigned_to,omitzero" nullable:"true" minimum:"1"`
	CustomFields   map[string]json.RawMessage `json:"custom_fields,omitempty" description:"A partial set of custom fields: absent names keep their value, null clears one." customFields:"contacts"`
}

// Company is an organisation contacts and deals belong to.
type Company struct {
	ID             int64          `json:"id" minimum:"1" example:"7"`
	Name           string         `json:"name" maxLength:"255" example:"Analytical Engines Ltd"`
	Domain         *string        `json:"domain" maxLength:"255" example:"engines.example"`
	Website        *string        `json:"website" maxLength:"255"`
	Phone          *string        `json:"phone" maxLength:"255"`
	Industry       *string        `json:"industry" maxLength:"255" example:"Machinery"`
	AddressStreet  *string        `json:"address_street" maxLength:"255"`
	AddressCity    *string        `json:"address_city" maxLength:"255"`
	AddressState   *string        `json:"address_state" maxLength:"255"`
	AddressZip     *string        `json:"address_zip" maxLength:"255"`
	AddressCountry *string        `json:"address_country" maxLength:"255"`
	CustomFields   map[string]any `json:"custom_fields" description:"This installation's custom fields (GET /properties/companies): every defined name, null where empty." customFields:"companies"`
	CreatedAt      timestamp.Time `json:"created_at"`
	UpdatedAt      timestamp.Time `json:"updated_at"`
}

// CompanyInput is the body of POST /companies and PUT /companies/{id}.
type CompanyInput struct {
	Name           string                     `json:"name" minLength:"1" maxLength:"255" example:"Analytical Engines Ltd"`
	Domain         patch.Field[string]        `json:"domain,omitzero" nullable:"true" maxLength:"255"`
	Website        patch.Field[string]        `json:"website,omitzero" nullable:"true" maxLength:"255"`
	Phone          patch.Field[string]        `json:"phone,omitzero" nullable:"true" maxLength:"255"`
	Industry       patch.Field[string]        `json:"industry,omitzero" nullable:"true" maxLength:"255"`
	AddressStreet  patch.Field[string]        `json:"address_street,omitzero" nullable:"true" maxLength:"255"`
	AddressCity    patch.Field[string]        `json:"address_city,omitzero" nullable:"true" maxLength:"255"`
	AddressState   patch.Field[string]        `json:"address_state,omitzero" nullable:"true" maxLength:"255"`
	AddressZip     patch.Field[string]        `json:"address_zip,omitzero" nullable:"true" maxLength:"255"`
	AddressCountry patch.Field[string]        `json:"address_country,omitzero" nullable:"true" maxLength:"255"`
	CustomFields   map[string]json.RawMessage `json:"custom_fields,omitempty" description:"A partial set of custom fields: absent names keep their value, null clears one." customFields:"companies"`
}

// ContactUpdate is one input of POST /contacts/batch/update: a contact
// write body with the id of the contact it changes (flat in JSON).
type ContactUpdate struct {
	ID int64 `json:"id" minimum:"1" example:"42"`
	ContactInput
}

// CompanyUpdate is one input of POST /companies/batch/update.
type CompanyUpdate struct {
	ID int64 `json:"id" minimum:"1" example:"7"`
	CompanyInput
}

// CompanyMatch is a company whose name resembles the one asked for.
type CompanyMatch struct {
	Company
	Score float64 `json:"score" minimum:"0" maximum:"1" example:"0.82"`
}
