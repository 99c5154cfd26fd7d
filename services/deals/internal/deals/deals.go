// Package deals is the deals bounded context: the sales pipeline's stages,
// deals with exact money values, and quotes whose totals the server
// computes. It holds the domain types, the rules, and the small interfaces
// storage and the contacts client implement.
package deals

import (
	"context"
	"encoding/json"
	"time"

	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/timestamp"
)

// Deal and stage outcomes. A stage's outcome is the status of every deal
// in it, so moving a deal to Closed Won makes it won.
const (
	StatusOpen = "open"
	StatusWon  = "won"
	StatusLost = "lost"
)

// Outcomes lists the allowed stage outcomes / deal statuses.
var Outcomes = []string{StatusOpen, StatusWon, StatusLost}

// Quote statuses.
const (
	QuoteDraft    = "draft"
	QuoteSent     = "sent"
	QuoteAccepted = "accepted"
	QuoteDeclined = "declined"
)

// QuoteStatuses lists the allowed quote statuses.
var QuoteStatuses = []string{QuoteDraft, QuoteSent, QuoteAccepted, QuoteDeclined}

// Event types published on the deals stream.
const (
	EventDealCreated = "deal.created"
	EventDealUpdated = "deal.updated"
	EventDealDeleted = "deal.deleted"
)

// Stage is a step of the pipeline.
type Stage struct {
	ID        int64          `json:"id"`
	Name      string         `json:"name"`
	Position  int            `json:"position"`
	Outcome   string         `json:"outcome"`
	CreatedAt timestamp.Time `json:"created_at"`
	UpdatedAt timestamp.Time `json:"updated_at"`
}

// StageWrite is a stage write as sent (dealsapi.CreateStage, UpdateStage).
type StageWrite struct {
	Name     patch.Field[string] `json:"name"`
	Position patch.Field[int]    `json:"position"`
	Outcome  patch.Field[string] `json:"outcome"`
}

// StageRecord is a validated stage write; a nil Position appends (create)
// or keeps the place (update).
type StageRecord struct {
	Name     string
	Position *int
	Outcome  string
}

// Deal is the deal record as the API returns it.
type Deal struct {
	ID                int64          `json:"id"`
	Title             string         `json:"title"`
	Value             Money          `json:"value"` // exactly 2 places in every currency (NewDealValue)
	Currency          string         `json:"currency"`
	StageID           int64          `json:"stage_id"`
	StageName         string         `json:"stage_name"`
	Status            string         `json:"status"`
	CompanyID         *int64         `json:"company_id"`
	CompanyName       *string        `json:"company_name"`
	ContactID         *int64         `json:"contact_id"`
	ExpectedCloseDate *string        `json:"expected_close_date"`
	AssignedTo        *int64         `json:"assigned_to"`
	AssignedToName    *string        `json:"assigned_to_name"`
	SourceLeadID      *int64         `json:"source_lead_id"`
	CreatedAt         timestamp.Time `json:"created_at"`
	UpdatedAt         timestamp.Time `json:"updated_at"`
	// CompanyUpdatedAt is the version (contacts' updated_at) of the
	// company CompanyName was taken from; nil when unknown. Internal.
	CompanyUpdatedAt *time.Time `json:"-"`
}

// DealWrite is a deal write as sent (dealsapi.CreateDeal, UpdateDeal and
// the internal create).
// Absent fields keep their value on PUT; null clears them.
type DealWrite struct {
	Title             patch.Field[string] `json:"title"`
	Value             Number              `json:"value"`
	Currency          patch.Field[string] `json:"currency"`
	StageID           patch.Field[int64]  `json:"stage_id"`
	Status            patch.Field[string] `json:"status"`
	CompanyID         patch.Field[int64]  `json:"company_id"`
	ContactID         patch.Field[int64]  `json:"contact_id"`
	ExpectedCloseDate patch.Field[string] `json:"expected_close_date"`
	AssignedTo        patch.Field[int64]  `json:"assigned_to"`
	SourceLeadID      patch.Field[int64]  `json:"source_lead_id"`
}

// DealRecord is a validated deal as storage writes it. Status is not here:
// storage derives it from the stage's outcome in the same statement.
type DealRecord struct {
	Title             string
	Value             decimal.Decimal
	Currency          string
	StageID           int64
	CompanyID         *int64
	CompanyName       *string
	CompanyUpdatedAt  *time.Time
	ContactID         *int64
	ExpectedCloseDate *string
	AssignedTo        *int64
	SourceLeadID      *int64
}

// Record returns the writable part of a stored deal.
func (d Deal) Record() DealRecord {
	return DealRecord{
		Title: d.Title, Value: d.Value.Amount, Currency: d.Currency, StageID: d.StageID,
		CompanyID: d.CompanyID, CompanyName: d.CompanyName, CompanyUpdatedAt: d.CompanyUpdatedAt, ContactID: d.ContactID,
		ExpectedCloseDate: d.ExpectedCloseDate, AssignedTo: d.AssignedTo, SourceLeadID: d.SourceLeadID,
	}
}

// DealFilter is one page of the deals list: the common list query plus
// deals' own filters.
type DealFilter struct {
	list.Query
	StageID, CompanyID, ContactID, AssignedTo *int64
	Statuses                                  []string
	// AssignedToAny restricts to these assignees (scope=me/team); nil means
	// no restriction, an empty non-nil slice matches nothing.
	AssignedToAny []int64
}

// DealSorts are the keys the deals list sorts by (storage maps each to its
// column); DefaultDealSort is the order without sort_by.
var DealSorts = []string{"title", "value", "stage", "expected_close_date", "created_at", "updated_at"}

// DefaultDealSort is the deals list's order when none is asked for.
const DefaultDealSort = "created_at"

// LineItem is one quote line; Amount = Quantity × UnitPrice rounded to the
// currency's minor unit.
type LineItem struct {
	Description string   `json:"description"`
	Quantity    Quantity `json:"quantity"`
	UnitPrice   Money    `json:"unit_price"`
	Amount      Money    `json:"amount"`
}

// Quantity renders as a JSON number with its exact decimal text ("1.5"):
// quantities and rates are inputs of the computation, never sums.
type Quantity struct{ decimal.Decimal }

// MarshalJSON writes the plain decimal literal.
func (q Quantity) MarshalJSON() ([]byte, error) { return []byte(q.String()), nil }

// Quote is an offer for a deal, in the deal's currency.
type Quote struct {
	ID          int64          `json:"id"`
	DealID      int64          `json:"deal_id"`
	QuoteNumber string         `json:"quote_number"`
	Status      string         `json:"status"`
	Currency    string         `json:"currency"`
	ValidUntil  *string        `json:"valid_until"`
	LineItems   []LineItem     `json:"line_items"`
	Subtotal    Money          `json:"subtotal"`
	TaxRate     Quantity       `json:"tax_rate"`
	Tax         Money          `json:"tax"`
	Total       Money          `json:"total"`
	CreatedAt   timestamp.Time `json:"created_at"`
	UpdatedAt   timestamp.Time `json:"updated_at"`
}

// LineItemWrite is one line of a quote body.
type LineItemWrite struct {
	Description string `json:"description"`
	Quantity    Number `json:"quantity"`
	UnitPrice   Number `json:"unit_price"`
}

// QuoteWrite is a quote write as sent (dealsapi.CreateQuote, UpdateQuote).
type QuoteWrite struct {
	Status     patch.Field[string]          `json:"status"`
	ValidUntil patch.Field[string]          `json:"valid_until"`
	TaxRate    Number                       `json:"tax_rate"`
	LineItems  patch.Field[[]LineItemWrite] `json:"line_items"`
}

// QuoteRecord is a validated, computed quote as storage writes it.
type QuoteRecord struct {
	Status     string
	Currency   string
	ValidUntil *string
	LineItems  []LineItem
	Subtotal   decimal.Decimal
	TaxRate    decimal.Decimal
	Tax        decimal.Decimal
	Total      decimal.Decimal
}

// Merge is the deal as contract merge tags see it (dealsapi.Client.Merge).
type Merge struct {
	Deal      Deal            `json:"deal"`
	StageName string          `json:"stage_name"`
	OwnerName *string         `json:"owner_name"`
	Company   json.RawMessage `json:"company"`
	Contact   json.RawMessage `json:"contact"`
	Quote     *Quote          `json:"quote"`
}

// Leads answers whether a deal's source_lead_id names a lead
// (*leadsapi.Client implements it).
type Leads interface {
	LeadExists(ctx context.Context, id int64) (bool, error)
}

// Store is the deals persistence.
type Store interface {
	// DealOwner returns a deal's assignee and creator, QuoteOwner those of
	// a quote's deal (not found is a fault.NotFound error).
	DealOwner(ctx context.Context, id int64) (directory.Owner, error)
	QuoteOwner(ctx context.Context, id int64) (directory.Owner, error)
	// CanWrite is directory.CheckWrite on this context's read model.
	CanWrite(ctx context.Context, o directory.Owner) error
	ListStages(ctx context.Context) ([]Stage, error)
	GetStage(ctx context.Context, id int64) (Stage, error)
	FirstStage(ctx context.Context, outcome string) (Stage, error)
	CreateStage(ctx context.Context, rec StageRecord) (Stage, error)
	UpdateStage(ctx context.Context, id int64, rec StageRecord) (Stage, error)
	DeleteStage(ctx context.Context, id int64) error

	ListDeals(ctx context.Context, f DealFilter) ([]Deal, int, error)
	GetDeal(ctx context.Context, id int64) (Deal, error)
	CreateDeal(ctx context.Context, rec DealRecord) (Deal, error)
	// CreateDealOnce creates at most one deal per idempotency key and
	// request; a retry gets the deal the first call created.
	CreateDealOnce(ctx context.Context, key string, request any, rec DealRecord) (idempotency.Done[Deal], error)
	// UpdateDeal reads the deal FOR UPDATE, lets apply turn it into the
	// record to store, and writes that in the same transaction.
	UpdateDeal(ctx context.Context, id int64, apply func(cur Deal) (DealRecord, error)) (Deal, error)
	DeleteDeal(ctx context.Context, id int64) error

	ListQuotes(ctx context.Context, dealID int64) ([]Quote, error)
	GetQuote(ctx context.Context, id int64) (Quote, error)
	CreateQuote(ctx context.Context, dealID int64, rec QuoteRecord) (Quote, error)
	// UpdateQuote locks the quote's deal, reads the quote as it is then,
	// lets apply compute the record to store (and whether its line items
	// replace the stored ones), and writes it in the same transaction.
	UpdateQuote(ctx context.Context, id int64, apply func(cur Quote) (rec QuoteRecord, replaceItems bool, err error)) (Quote, error)
	DeleteQuote(ctx context.Context, id int64) error
	// MergeQuote is the deal's accepted quote, else its newest; nil if none.
	MergeQuote(ctx context.Context, dealID int64) (*Quote, error)

	UserExists(ctx context.Context, id int64) (bool, error)
	UserName(ctx context.Context, id int64) (*string, error)
	TeamMembers(ctx context.Context, userID int64, teamID *int64) ([]int64, error)
}
