package dealsapi

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/timestamp"
)

// Stage is a step of the deal pipeline; its outcome is the status a deal
// takes when moved there.
type Stage struct {
	ID        int64          `json:"id" minimum:"1" example:"2"`
	Name      string         `json:"name" maxLength:"100" example:"Proposal"`
	Position  int            `json:"position" minimum:"1" example:"2"`
	Outcome   string         `json:"outcome" enum:"open,won,lost" example:"open"`
	CreatedAt timestamp.Time `json:"created_at"`
	UpdatedAt timestamp.Time `json:"updated_at"`
}

// StageInput is the body of POST /deal-stages and PUT /deal-stages/{id}.
type StageInput struct {
	Name     string              `json:"name" minLength:"1" maxLength:"100" example:"Proposal"`
	Position patch.Field[int]    `json:"position,omitzero" nullable:"true" minimum:"1" description:"1-based; others shift. Absent appends."`
	Outcome  patch.Field[string] `json:"outcome,omitzero" nullable:"true" enum:"open,won,lost"`
}

// Deal is an opportunity. Money is a decimal string, never a float.
type Deal struct {
	ID                int64          `json:"id" minimum:"1" example:"12"`
	Title             string         `json:"title" maxLength:"255" example:"Batcave retrofit"`
	Value             string         `json:"value" pattern:"^-?[0-9]+\\.[0-9]{2}$" description:"Decimal with 2 places." example:"250000.00"`
	Currency          string         `json:"currency" pattern:"^[A-Z]{3}$" description:"ISO 4217." example:"USD"`
	StageID           int64          `json:"stage_id" minimum:"1" example:"1"`
	StageName         string         `json:"stage_name" example:"Lead"`
	Status            string         `json:"status" enum:"open,won,lost" example:"open"`
	CompanyID         *int64         `json:"company_id" minimum:"1" example:"7"`
	CompanyName       *string        `json:"company_name" readOnly:"true" example:"Wayne Enterprises"`
	ContactID         *int64         `json:"contact_id" minimum:"1"`
	ExpectedCloseDate *string        `json:"expected_close_date" format:"date" example:"2026-12-31"`
	AssignedTo        *int64         `json:"assigned_to" minimum:"1"`
	AssignedToName    *string        `json:"assigned_to_name" readOnly:"true"`
	SourceLeadID      *int64         `json:"source_lead_id" minimum:"1" description:"The lead this deal was qualified from."`
	CustomFields      map[string]any `json:"custom_fields" description:"This installation's custom fields (GET /properties/deals): every defined name, null where empty." customFields:"deals"`
	CreatedAt         timestamp.Time `json:"created_at"`
	UpdatedAt         timestamp.Time `json:"updated_at"`
}

// DealInput is the body of POST /deals and PUT /deals/{id}: an absent
// optional field is unchanged, null (or "") clears it.
type DealInput struct {
	Title             string               `json:"title" minLength:"1" maxLength:"255" example:"Batcave retrofit"`
	Value             patch.Field[Decimal] `json:"value,omitzero" nullable:"true" decimal:"^[0-9]{1,15}(\\.[0-9]{1,2})?$" description:"A decimal string, at most 2 places (no more than the currency's minor unit), below 10^15; a JSON number is accepted too, read as its exact literal." example:"250000.00"`
	Currency          patch.Field[string]  `json:"currency,omitzero" nullable:"true" description:"ISO 4217, default USD." example:"USD"`
	StageID           patch.Field[int64]   `json:"stage_id,omitzero" nullable:"true" minimum:"1"`
	Status            patch.Field[string]  `json:"status,omitzero" nullable:"true" enum:"open,won,lost"`
	CompanyID         patch.Field[int64]   `json:"company_id,omitzero" nullable:"true" minimum:"1"`
	ContactID         patch.Field[int64]   `json:"contact_id,omitzero" nullable:"true" minimum:"1"`
	ExpectedCloseDate patch.Field[string]  `json:"expected_close_date,omitzero" nullable:"true" format:"date"`
	AssignedTo        patch.Field[int64]   `json:"assigned_to,omitzero" nullable:"true" minimum:"1"`
	SourceLeadID      patch.Field[int64]   `json:"source_lead_id,omitzero" nullable:"true" minimum:"1"`
	// CustomFields are checked against the installation's definitions of
	// deals.
	CustomFields map[string]json.RawMessage `json:"custom_fields,omitempty" description:"A partial set of custom fields: absent names keep their value, null clears one." customFields:"deals"`
}

// DealUpdate is one input of POST /deals/batch/update: a deal write body
// with the id of the deal it changes (flat in JSON).
type DealUpdate struct {
	ID int64 `json:"id" minimum:"1" example:"12"`
	DealInput
}

// LineItem is one priced line of a quote; amount = quantity × unit_price.
type LineItem struct {
	Description string  `json:"description" maxLength:"255" example:"Consulting day"`
	Quantity    Decimal `json:"quantity" description:"Decimal literal." example:"3"`
	UnitPrice   string  `json:"unit_price" description:"Decimal string." example:"1200.00"`
	Amount      string  `json:"amount" description:"Decimal string." example:"3600.00"`
}

// Quote is an offer for a deal in the deal's currency; totals are computed
// in decimal by the server.
type Quote struct {
	ID          int64          `json:"id" minimum:"1" example:"4"`
	DealID      int64          `json:"deal_id" minimum:"1" example:"12"`
	QuoteNumber string         `json:"quote_number" example:"Q-2026-0004"`
	Status      string         `json:"status" enum:"draft,sent,accepted,declined" example:"draft"`
	Currency    string         `json:"currency" example:"USD"`
	ValidUntil  *string        `json:"valid_until" format:"date" example:"2026-12-31"`
	LineItems   []LineItem     `json:"line_items" nullable:"false" maxItems:"500"`
	Subtotal    string         `json:"subtotal" example:"3600.00"`
	TaxRate     Decimal        `json:"tax_rate" description:"Percentage, decimal literal." example:"20"`
	Tax         string         `json:"tax" example:"720.00"`
	Total       string         `json:"total" example:"4320.00"`
	CreatedAt   timestamp.Time `json:"created_at"`
	UpdatedAt   timestamp.Time `json:"updated_at"`
}

// LineItemInput is one line of a QuoteInput.
type LineItemInput struct {
	Description string  `json:"description" maxLength:"255" example:"Consulting day"`
	Quantity    Decimal `json:"quantity" decimal:"^[0-9]{1,10}(\\.[0-9]{1,4})?$" description:"A decimal string, greater than 0, at most 1000000000 with at most 4 places; a JSON number is accepted too, read as its exact literal." example:"3"`
	UnitPrice   Decimal `json:"unit_price" decimal:"^[0-9]{1,15}(\\.[0-9]{1,4})?$" description:"A decimal string with at most the currency's minor unit of places, below 10^15; a JSON number is accepted too, read as its exact literal." example:"1200.00"`
}

// QuoteInput is the body of POST /deals/{id}/quotes and PUT /quotes/{id}:
// an absent field is unchanged; line items, when given, replace them all.
type QuoteInput struct {
	Status     patch.Field[string]  `json:"status,omitzero" enum:"draft,sent,accepted,declined"`
	ValidUntil patch.Field[string]  `json:"valid_until,omitzero" nullable:"true" format:"date"`
	TaxRate    patch.Field[Decimal] `json:"tax_rate,omitzero" nullable:"true" decimal:"^[0-9]{1,3}(\\.[0-9]{1,4})?$" description:"A percentage from 0 to 100 as a decimal string, at most 4 places; a JSON number is accepted too, read as its exact literal." example:"20"`
	LineItems  []LineItemInput      `json:"line_items,omitempty" maxItems:"500"`
}

// Decimal is an exact decimal number on the wire, kept as its text so no
// float ever reads or writes it. It is written as a JSON number literal
// and read from one or from a string holding one (trimmed; "" and null
// read as empty). Any other JSON value is kept as its JSON text, which is
// no decimal: deals refuses it as it refuses "abc", with the body's other
// field errors rather than as a malformed body.
type Decimal string

// UnmarshalJSON keeps the literal of a number or the content of a string.
func (d *Decimal) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*d = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*d = Decimal(strings.TrimSpace(s))
	default:
		*d = Decimal(b)
	}
	return nil
}

// MarshalJSON writes the number literal; text that is none (what a client
// sent that was no decimal) is written as a string, so it reads back as it was.
func (d Decimal) MarshalJSON() ([]byte, error) {
	if b := []byte(d); len(b) > 0 && (b[0] == '-' || (b[0] >= '0' && b[0] <= '9')) && json.Valid(b) {
		return b, nil
	}
	return json.Marshal(string(d))
}

// JSONSchemaBytes documents a Decimal as the JSON number it is written as:
// the document's reflector would read its Go kind as a string. An input
// field says what it accepts (a string too) with its `decimal` tag.
func (Decimal) JSONSchemaBytes() ([]byte, error) { return []byte(`{"type":"number"}`), nil }
