package contractsapi

import (
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/timestamp"
)

// Status is a contract's lifecycle state. It is a type of its own so the
// contracts service names its states and their transitions with the type
// of the record it sends.
type Status string

// Contract is a document generated for a deal from a template; content is
// the HTML with merge tags resolved.
type Contract struct {
	ID              int64          `json:"id" minimum:"1" example:"3"`
	ContractNumber  string         `json:"contract_number" example:"MSA-2026-0003"`
	Title           string         `json:"title" maxLength:"255" example:"Batcave MSA"`
	Name            string         `json:"name" description:"Same as title." example:"Batcave MSA"`
	DealID          int64          `json:"deal_id" minimum:"1" example:"12"`
	DealTitle       string         `json:"deal_title" example:"Batcave retrofit"`
	CompanyID       *int64         `json:"company_id" minimum:"1"`
	CompanyName     *string        `json:"company_name"`
	TemplateID      int64          `json:"template_id" minimum:"1" example:"1"`
	TemplateName    string         `json:"template_name" example:"Master services agreement"`
	Status          Status         `json:"status" enum:"draft,active,executed,expired,terminated,archived" example:"draft"`
	StartDate       *string        `json:"start_date" format:"date" example:"2026-01-01"`
	EndDate         *string        `json:"end_date" format:"date"`
	EffectiveDate   string         `json:"effective_date" description:"start_date, or \"\" when unset." example:"2026-01-01"`
	TerminationDate string         `json:"termination_date" description:"end_date, or \"\" when unset." example:"2026-12-31"`
	TermMonths      int            `json:"term_months" minimum:"0" maximum:"600" example:"12"`
	AutoRenew       bool           `json:"auto_renew"`
	PartnerRef      *string        `json:"partner_ref" maxLength:"255"`
	Content         string         `json:"content" maxLength:"100000" example:"<p>Batcave retrofit</p>"`
	UnresolvedTags  []string       `json:"unresolved_tags" nullable:"false" description:"Merge tags that resolved to nothing at generation."`
	ExecutedFile    *ExecutedFile  `json:"executed_file"`
	CreatedBy       *int64         `json:"created_by" minimum:"1"`
	CreatedAt       timestamp.Time `json:"created_at"`
	UpdatedAt       timestamp.Time `json:"updated_at"`
}

// ExecutedFile describes the signed copy uploaded for a contract.
type ExecutedFile struct {
	Filename   string         `json:"filename" example:"signed.pdf"`
	Size       int64          `json:"size" minimum:"1" maximum:"26214400" example:"48213"`
	SHA256     string         `json:"sha256" pattern:"^[0-9a-f]{64}$"`
	UploadedAt timestamp.Time `json:"uploaded_at"`
}

// ContractInput is the body of POST /contracts (generate) and PUT
// /contracts/{id}; deal_id, template_id and title are required on both.
// The optional fields follow the PUT rule: absent keeps, null or "" clears.
// status and term_months are extensions: status changes go through PUT,
// and term_months overrides the template's default term.
type ContractInput struct {
	DealID     int64               `json:"deal_id" minimum:"1" example:"12"`
	TemplateID int64               `json:"template_id" minimum:"1" example:"1"`
	Title      string              `json:"title" minLength:"1" maxLength:"255" example:"Batcave MSA"`
	StartDate  patch.Field[string] `json:"start_date,omitzero" nullable:"true" format:"date"`
	EndDate    patch.Field[string] `json:"end_date,omitzero" nullable:"true" format:"date"`
	AutoRenew  patch.Field[bool]   `json:"auto_renew,omitzero" nullable:"true"`
	PartnerRef patch.Field[string] `json:"partner_ref,omitzero" nullable:"true" maxLength:"255"`
	Content    patch.Field[string] `json:"content,omitzero" nullable:"true" maxLength:"100000" description:"HTML; sanitised, merge tags checked."`
	TermMonths patch.Field[int]    `json:"term_months,omitzero" nullable:"true" minimum:"1" maximum:"600"`
	Status     patch.Field[string] `json:"status,omitzero" nullable:"true" enum:"draft,active,executed,expired,terminated,archived"`
}

// Template is a contract template: HTML with merge tags plus header and
// footer cells ({{page}} and {{pages}} allowed there).
type Template struct {
	ID                int64          `json:"id" minimum:"1" example:"1"`
	Name              string         `json:"name" maxLength:"100" example:"Master services agreement"`
	Content           string         `json:"content" maxLength:"100000" example:"<p>{{deal.title}}</p>"`
	NumberPrefix      string         `json:"number_prefix" maxLength:"255" example:"MSA"`
	DefaultTermMonths int            `json:"default_term_months" minimum:"0" maximum:"600" example:"12"`
	HeaderLeft        string         `json:"header_left" maxLength:"255"`
	HeaderCenter      string         `json:"header_center" maxLength:"255"`
	HeaderRight       string         `json:"header_right" maxLength:"255"`
	FooterLeft        string         `json:"footer_left" maxLength:"255"`
	FooterCenter      string         `json:"footer_center" maxLength:"255" example:"Page {{page}} of {{pages}}"`
	FooterRight       string         `json:"footer_right" maxLength:"255"`
	ContractsCount    int            `json:"contracts_count" minimum:"0"`
	CreatedBy         *int64         `json:"created_by" minimum:"1"`
	CreatedAt         timestamp.Time `json:"created_at"`
	UpdatedAt         timestamp.Time `json:"updated_at"`
}

// TemplateInput is the body of POST /contract-templates and PUT
// /contract-templates/{id}; name and content are required on both. The
// optional fields follow the PUT rule: absent keeps, null or "" clears to
// the default.
type TemplateInput struct {
	Name              string              `json:"name" minLength:"1" maxLength:"100" example:"Master services agreement"`
	Content           string              `json:"content" minLength:"1" maxLength:"100000" example:"<p>{{deal.title}}</p>"`
	NumberPrefix      patch.Field[string] `json:"number_prefix,omitzero" nullable:"true" maxLength:"255"`
	DefaultTermMonths patch.Field[int]    `json:"default_term_months,omitzero" nullable:"true" minimum:"1" maximum:"600"`
	HeaderLeft        patch.Field[string] `json:"header_left,omitzero" nullable:"true" maxLength:"255"`
	HeaderCenter      patch.Field[string] `json:"header_center,omitzero" nullable:"true" maxLength:"255"`
	HeaderRight       patch.Field[string] `json:"header_right,omitzero" nullable:"true" maxLength:"255"`
	FooterLeft        patch.Field[string] `json:"footer_left,omitzero" nullable:"true" maxLength:"255"`
	FooterCenter      patch.Field[string] `json:"footer_center,omitzero" nullable:"true" maxLength:"255"`
	FooterRight       patch.Field[string] `json:"footer_right,omitzero" nullable:"true" maxLength:"255"`
}

// MergeTag is one tag of the merge-tag catalogue.
type MergeTag struct {
	Tag         string `json:"tag" example:"{{deal.title}}"`
	Label       string `json:"label" example:"Deal title"`
	Description string `json:"description"`
	Example     string `json:"example" example:"Batcave retrofit"`
}

// MergeTags answers GET /contract-templates/tags: tags grouped by entity.
type MergeTags struct {
	Success bool                  `json:"success" const:"true"`
	Data    map[string][]MergeTag `json:"data" description:"Keyed by entity: Licensee, Deal, Quote, Contract."`
}
