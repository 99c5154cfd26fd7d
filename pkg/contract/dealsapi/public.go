package dealsapi

import "time"

// Stage is a step of the deal pipeline; its outcome is the status a deal
// takes when moved there.
type Stage struct {
	ID        int64     `json:"id" minimum:"1" example:"2"`
	Name      string    `json:"name" maxLength:"100" example:"Proposal"`
	Position  int       `json:"position" minimum:"1" example:"2"`
	Outcome   string    `json:"outcome" enum:"open,won,lost" example:"open"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// StageInput is the body of POST /deal-stages and PUT /deal-stages/{id}.
type StageInput struct {
	Name     string  `json:"name" minLength:"1" maxLength:"100" example:"Proposal"`
	Position *int    `json:"position,omitempty" nullable:"true" minimum:"1" description:"1-based; others shift. Absent appends."`
	Outcome  *string `json:"outcome,omitempty" nullable:"true" enum:"open,won,lost"`
}

// Deal is an opportunity. Money is a decimal string, never a float.
type Deal struct {
	ID                int64     `json:"id" minimum:"1" example:"12"`
	Title             string    `json:"title" maxLength:"255" example:"Batcave retrofit"`
	Value             string    `json:"value" pattern:"^-?[0-9]+\\.[0-9]{2}$" description:"Decimal with 2 places." example:"250000.00"`
	Currency          string    `json:"currency" pattern:"^[A-Z]{3}$" description:"ISO 4217." example:"USD"`
	StageID           int64     `json:"stage_id" minimum:"1" example:"1"`
	StageName         string    `json:"stage_name" example:"Lead"`
	Status            string    `json:"status" enum:"open,won,lost" example:"open"`
	CompanyID         *int64    `json:"company_id" minimum:"1" example:"7"`
	CompanyName       *string   `json:"company_name" readOnly:"true" example:"Wayne Enterprises"`
	ContactID         *int64    `json:"contact_id" minimum:"1"`
	ExpectedCloseDate *string   `json:"expected_close_date" format:"date" example:"2026-12-31"`
	AssignedTo        *int64    `json:"assigned_to" minimum:"1"`
	AssignedToName    *string   `json:"assigned_to_name" readOnly:"true"`
	SourceLeadID      *int64    `json:"source_lead_id" minimum:"1" description:"The lead this deal was qualified from."`
	CreatedAt         time.Time `json:"created_at"`
	UpdatedAt         time.Time `json:"updated_at"`
}

// DealInput is the body of POST /deals and PUT /deals/{id}.
type DealInput struct {
	Title             string  `json:"title" minLength:"1" maxLength:"255" example:"Batcave retrofit"`
	Value             any     `json:"value,omitempty" nullable:"true" decimal:"^[0-9]{1,15}(\\.[0-9]{1,2})?$" description:"A decimal string, at most 2 places (no more than the currency's minor unit), below 10^15; a JSON number is accepted too, read as its exact literal." example:"250000.00"`
	Currency          *string `json:"currency,omitempty" nullable:"true" description:"ISO 4217, default USD." example:"USD"`
	StageID           *int64  `json:"stage_id,omitempty" nullable:"true" minimum:"1"`
	Status            *string `json:"status,omitempty" nullable:"true" enum:"open,won,lost"`
	CompanyID         *int64  `json:"company_id,omitempty" nullable:"true" minimum:"1"`
	ContactID         *int64  `json:"contact_id,omitempty" nullable:"true" minimum:"1"`
	ExpectedCloseDate *string `json:"expected_close_date,omitempty" nullable:"true" format:"date"`
	AssignedTo        *int64  `json:"assigned_to,omitempty" nullable:"true" minimum:"1"`
	SourceLeadID      *int64  `json:"source_lead_id,omitempty" nullable:"true" minimum:"1"`
}

// LineItem is one priced line of a quote; amount = quantity × unit_price.
type LineItem struct {
	Description string  `json:"description" maxLength:"255" example:"Consulting day"`
	Quantity    float64 `json:"quantity" description:"Decimal literal." example:"3"`
	UnitPrice   string  `json:"unit_price" description:"Decimal string." example:"1200.00"`
	Amount      string  `json:"amount" description:"Decimal string." example:"3600.00"`
}

// Quote is an offer for a deal in the deal's currency; totals are computed
// in decimal by the server.
type Quote struct {
	ID          int64      `json:"id" minimum:"1" example:"4"`
	DealID      int64      `json:"deal_id" minimum:"1" example:"12"`
	QuoteNumber string     `json:"quote_number" example:"Q-2026-0004"`
	Status      string     `json:"status" enum:"draft,sent,accepted,declined" example:"draft"`
	Currency    string     `json:"currency" example:"USD"`
	ValidUntil  *string    `json:"valid_until" format:"date" example:"2026-12-31"`
	LineItems   []LineItem `json:"line_items" nullable:"false" maxItems:"500"`
	Subtotal    string     `json:"subtotal" example:"3600.00"`
	TaxRate     float64    `json:"tax_rate" description:"Percentage, decimal literal." example:"20"`
	Tax         string     `json:"tax" example:"720.00"`
	Total       string     `json:"total" example:"4320.00"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// LineItemInput is one line of a QuoteInput.
type LineItemInput struct {
	Description string `json:"description" maxLength:"255" example:"Consulting day"`
	Quantity    any    `json:"quantity" decimal:"^[0-9]{1,10}(\\.[0-9]{1,4})?$" description:"A decimal string, greater than 0, at most 1000000000 with at most 4 places; a JSON number is accepted too, read as its exact literal." example:"3"`
	UnitPrice   any    `json:"unit_price" decimal:"^[0-9]{1,15}(\\.[0-9]{1,4})?$" description:"A decimal string with at most the currency's minor unit of places, below 10^15; a JSON number is accepted too, read as its exact literal." example:"1200.00"`
}

// QuoteInput is the body of POST /deals/{id}/quotes and PUT /quotes/{id}.
type QuoteInput struct {
	Status     *string         `json:"status,omitempty" enum:"draft,sent,accepted,declined"`
	ValidUntil *string         `json:"valid_until,omitempty" nullable:"true" format:"date"`
	TaxRate    any             `json:"tax_rate,omitempty" nullable:"true" decimal:"^[0-9]{1,3}(\\.[0-9]{1,4})?$" description:"A percentage from 0 to 100 as a decimal string, at most 4 places; a JSON number is accepted too, read as its exact literal." example:"20"`
	LineItems  []LineItemInput `json:"line_items,omitempty" maxItems:"500"`
}
