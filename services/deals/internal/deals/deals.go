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

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/list"
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

// Object is deals as a carrier of custom fields: a definition may not take
// a name the deal record has.
var Object = customfield.Object{Name: propertyapi.Deals, Table: "deals", Builtins: []string{
	"id", "title", "value", "currency", "stage_id", "stage_name", "status", "company_id", "company_name",
	"contact_id", "expected_close_date", "assigned_to", "assigned_to_name", "source_lead_id", "created_by",
	"created_at", "updated_at"}}

// Stage is a step of the pipeline.
type Stage = dealsapi.Stage

// StageRecord is a validated stage write; a nil Position appends (create)
// or keeps the place (update).
type StageRecord struct {
	Name     string
	Position *int
	Outcome  string
}

// Deal is a deal as the core reads it: the public record, with its value
// as an exact amount and what never goes on the wire. It is sent as
// Public renders it.
type Deal struct {
	dealsapi.Deal
	// Value is the amount the record's value renders: exactly 2 places in
	// every currency (NewDealValue).
	Value Money
	// CompanyUpdatedAt is the version (contacts' updated_at) of the
	// company CompanyName was taken from; nil when unknown.
	CompanyUpdatedAt *time.Time
	// Held is the custom field values the deal stores; the record's
	// CustomFields renders them with the definitions (every defined name,
	// null where empty), which is not what a write merges into.
	Held customfield.Values
}

// Public is the deal as deals sends it everywhere: the API, the merge
// data, the outbox events and the answer an idempotent create keeps.
func (d Deal) Public() dealsapi.Deal {
	p := d.Deal
	p.Value = d.Value.String()
	return p
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
	// CustomFields is the values to store (customfield.Check's answer).
	CustomFields customfield.Values
}

// Record returns the writable part of a stored deal.
func (d Deal) Record() DealRecord {
	return DealRecord{
		Title: d.Title, Value: d.Value.Amount, Currency: d.Currency, StageID: d.StageID,
		CompanyID: d.CompanyID, CompanyName: d.CompanyName, CompanyUpdatedAt: d.CompanyUpdatedAt, ContactID: d.ContactID,
		ExpectedCloseDate: d.ExpectedCloseDate, AssignedTo: d.AssignedTo, SourceLeadID: d.SourceLeadID,
		CustomFields: d.Held,
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
	// Custom is the cf[...] filters and the cf.<name> sort.
	Custom customfield.Query
}

// DealSorts are the keys the deals list sorts by (storage maps each to its
// column); DefaultDealSort is the order without sort_by.
var DealSorts = []string{"title", "value", "stage", "expected_close_date", "created_at", "updated_at"}

// DefaultDealSort is the deals list's order when none is asked for.
const DefaultDealSort = "created_at"

// LineItem is one quote line; Amount = Quantity × UnitPrice rounded to the
// currency's minor unit.
type LineItem struct {
	Description string
	Quantity    decimal.Decimal
	UnitPrice   Money
	Amount      Money
}

// Public is the line as deals sends it: amounts as strings with the
// currency's minor digits, the quantity as its exact literal.
func (l LineItem) Public() dealsapi.LineItem {
	return dealsapi.LineItem{Description: l.Description, Quantity: dealsapi.Decimal(l.Quantity.String()),
		UnitPrice: l.UnitPrice.String(), Amount: l.Amount.String()}
}

// Quote is a quote as the core reads it: the public record, with its
// lines, rate and totals as exact amounts. It is sent as Public renders it.
type Quote struct {
	dealsapi.Quote
	LineItems []LineItem
	Subtotal  Money
	TaxRate   decimal.Decimal
	Tax       Money
	Total     Money
}

// Public is the quote as deals sends it (the API, the merge data).
func (q Quote) Public() dealsapi.Quote {
	p := q.Quote
	p.LineItems = make([]dealsapi.LineItem, len(q.LineItems))
	for i, l := range q.LineItems {
		p.LineItems[i] = l.Public()
	}
	p.Subtotal, p.Tax, p.Total = q.Subtotal.String(), q.Tax.String(), q.Total.String()
	p.TaxRate = dealsapi.Decimal(q.TaxRate.String())
	return p
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
	Deal      dealsapi.Deal   `json:"deal"`
	StageName string          `json:"stage_name"`
	OwnerName *string         `json:"owner_name"`
	Company   json.RawMessage `json:"company"`
	Contact   json.RawMessage `json:"contact"`
	Quote     *dealsapi.Quote `json:"quote"`
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
	// The deal is kept as it was sent (Public).
	CreateDealOnce(ctx context.Context, key string, request any, rec DealRecord) (idempotency.Done[dealsapi.Deal], error)
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

	// Definitions lists the installation's custom fields of deals.
	Definitions(ctx context.Context) ([]customfield.Definition, error)
	// Lookup finds the deal holding value of the unique field d.
	Lookup(ctx context.Context, d customfield.Definition, value string) (id int64, found bool, err error)
	Batcher
	// Mover repoints deals for a merge of contacts or companies.
	Mover

	UserExists(ctx context.Context, id int64) (bool, error)
	UserName(ctx context.Context, id int64) (*string, error)
	TeamMembers(ctx context.Context, userID int64, teamID *int64) ([]int64, error)
}
