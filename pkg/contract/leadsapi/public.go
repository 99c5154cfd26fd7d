package leadsapi

import (
	"encoding/json"

	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/timestamp"
)

// Lead is a prospect not yet qualified into a contact.
type Lead struct {
	ID               int64           `json:"id" minimum:"1" example:"17"`
	FirstName        string          `json:"first_name" maxLength:"100" example:"Grace"`
	LastName         string          `json:"last_name" maxLength:"100" example:"Hopper"`
	Email            *string         `json:"email" format:"email" maxLength:"255" example:"grace@example.com"`
	Phone            *string         `json:"phone" maxLength:"255"`
	Company          *string         `json:"company" maxLength:"255" example:"Navy Labs"`
	JobTitle         *string         `json:"job_title" maxLength:"255"`
	Source           *string         `json:"source" maxLength:"255" example:"website"`
	Status           string          `json:"status" enum:"new,contacted,qualified,disqualified" example:"new"`
	Notes            *string         `json:"notes" maxLength:"100000"`
	Tags             *string         `json:"tags" maxLength:"255" description:"Comma-separated."`
	AssignedTo       *int64          `json:"assigned_to" minimum:"1"`
	AssignedToName   *string         `json:"assigned_to_name" readOnly:"true"`
	DisqualifyReason *string         `json:"disqualify_reason" maxLength:"1000"`
	QualifiedAt      *timestamp.Time `json:"qualified_at"`
	ContactID        *int64          `json:"contact_id" minimum:"1" description:"Set once qualified."`
	CompanyID        *int64          `json:"company_id" minimum:"1"`
	DealID           *int64          `json:"deal_id" minimum:"1"`
	CustomFields     map[string]any  `json:"custom_fields" description:"This installation's custom fields (GET /properties/leads): every defined name, null where empty." customFields:"leads"`
	CreatedBy        *int64          `json:"created_by" minimum:"1"`
	CreatedAt        timestamp.Time  `json:"created_at"`
	UpdatedAt        timestamp.Time  `json:"updated_at"`
}

// LeadInput is the body of POST /leads and PUT /leads/{id}; names are
// required on both, an absent optional field is unchanged, null or ""
// clears it.
type LeadInput struct {
	FirstName  string              `json:"first_name" minLength:"1" maxLength:"100" example:"Grace"`
	LastName   string              `json:"last_name" minLength:"1" maxLength:"100" example:"Hopper"`
	Email      patch.Field[string] `json:"email,omitzero" nullable:"true" maxLength:"255" example:"grace@example.com"`
	Phone      patch.Field[string] `json:"phone,omitzero" nullable:"true" maxLength:"255"`
	Company    patch.Field[string] `json:"company,omitzero" nullable:"true" maxLength:"255"`
	JobTitle   patch.Field[string] `json:"job_title,omitzero" nullable:"true" maxLength:"255"`
	Source     patch.Field[string] `json:"source,omitzero" nullable:"true" maxLength:"255"`
	Status     patch.Field[string] `json:"status,omitzero" nullable:"true" enum:"new,contacted,qualified,disqualified"`
	Notes      patch.Field[string] `json:"notes,omitzero" nullable:"true" maxLength:"100000"`
	Tags       patch.Field[string] `json:"tags,omitzero" nullable:"true" maxLength:"255"`
	AssignedTo patch.Field[int64]  `json:"assigned_to,omitzero" nullable:"true" minimum:"1"`
	// CustomFields are checked against the installation's definitions of
	// leads; intake forwards none.
	CustomFields map[string]json.RawMessage `json:"custom_fields,omitempty" description:"A partial set of custom fields: absent names keep their value, null clears one." customFields:"leads"`
}

// LeadUpdate is one input of POST /leads/batch/update: a lead write body
// with the id of the lead it changes (flat in JSON).
type LeadUpdate struct {
	ID int64 `json:"id" minimum:"1" example:"17"`
	LeadInput
}

// QualifyInput is the optional body of QualifyLead: which
// records to create or reuse besides the contact.
type QualifyInput struct {
	CreateCompany bool    `json:"create_company,omitempty" description:"Create a company from the lead's company name (or reuse company_id)."`
	CreateDeal    bool    `json:"create_deal,omitempty" description:"Create a deal for the new contact."`
	DealName      *string `json:"deal_name,omitempty" nullable:"true" maxLength:"255" example:"Compiler licence"`
	DealValue     any     `json:"deal_value,omitempty" nullable:"true" decimal:"^[0-9]{1,15}(\\.[0-9]{1,2})?$" description:"The deal's value: a decimal string such as \"1500.50\", at most 2 places (no more than the currency's minor unit); a JSON number is accepted too, read as its exact literal." example:"1500.50"`
	DealStageID   *int64  `json:"deal_stage_id,omitempty" nullable:"true" minimum:"1"`
	ContactID     *int64  `json:"contact_id,omitempty" nullable:"true" minimum:"1" description:"Link an existing contact instead of creating one."`
	CompanyID     *int64  `json:"company_id,omitempty" nullable:"true" minimum:"1" description:"Link an existing company."`
}

// Qualified answers QualifyLead: the qualified lead and the
// ids of the records it became.
type Qualified struct {
	Success   bool   `json:"success" const:"true"`
	Message   string `json:"message" example:"Lead qualified"`
	ContactID *int64 `json:"contact_id" minimum:"1" example:"42"`
	CompanyID *int64 `json:"company_id" minimum:"1" example:"7"`
	DealID    *int64 `json:"deal_id" minimum:"1" example:"12"`
	Data      Lead   `json:"data"`
}

// DisqualifyInput is the optional body of PUT /leads/{id}/disqualify.
type DisqualifyInput struct {
	Reason *string `json:"reason,omitempty" nullable:"true" maxLength:"1000" example:"No budget this year"`
}
