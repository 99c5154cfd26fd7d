// Package contracts is the core of the contracts context: templates, the
// merge-tag catalogue and resolver, contracts with their numbering, dates
// and status rules, and the signed copy. Storage, the deals client and the
// renderer are reached through the small interfaces declared here.
package contracts

import (
	"context"
	"errors"
	"io"
	"slices"
	"time"

	"github.com/opencrm/crm/pkg/contract/contractsapi"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/renderq"
)

// Status is a contract's lifecycle state.
type Status = contractsapi.Status

// The statuses a contract moves through.
const (
	Draft      Status = "draft"
	Active     Status = "active"
	Executed   Status = "executed"
	Expired    Status = "expired"
	Terminated Status = "terminated"
	Archived   Status = "archived"
)

// Statuses lists every status, for enum validation.
var Statuses = []string{"draft", "active", "executed", "expired", "terminated", "archived"}

// transitions lists the allowed status changes; anything else is
// invalid_transition.
var transitions = map[Status][]Status{
	Draft:      {Active, Archived},
	Active:     {Executed, Expired, Terminated, Archived},
	Executed:   {Expired, Terminated, Archived},
	Expired:    {Active, Archived},
	Terminated: {Archived},
	Archived:   {},
}

// CanTransition reports whether from may move to to.
func CanTransition(from, to Status) bool { return slices.Contains(transitions[from], to) }

// Frozen reports a status whose content may no longer change: the
// document has been signed or the contract is over.
func Frozen(s Status) bool { return s == Executed || s == Terminated || s == Archived }

// AcceptsSignedCopy reports a status from which uploading a signed copy is
// allowed (it moves draft and active to executed, and replaces the copy
// of an executed contract).
func AcceptsSignedCopy(s Status) bool { return s == Draft || s == Active || s == Executed }

// DefaultPrefix and DefaultTermMonths apply when a template omits them.
const (
	DefaultPrefix     = "CTR"
	DefaultTermMonths = 36
	// MaxTermMonths bounds a term to fifty years.
	MaxTermMonths = 600
)

// Template is a contract template: a body with merge fields and a default
// term.
type Template = contractsapi.Template

// headerCells returns a template's three header cells.
func headerCells(t Template) [3]string {
	return [3]string{t.HeaderLeft, t.HeaderCenter, t.HeaderRight}
}

// footerCells returns a template's three footer cells.
func footerCells(t Template) [3]string {
	return [3]string{t.FooterLeft, t.FooterCenter, t.FooterRight}
}

// ExecutedFile describes the signed copy of a contract.
type ExecutedFile = contractsapi.ExecutedFile

// Contract is a contract record: the record the API and the events send,
// and the cells the renderer needs, which never go on the wire. Dates are
// YYYY-MM-DD strings.
type Contract struct {
	contractsapi.Contract

	// Header and Footer are the template's cells with merge tags resolved
	// at generation time; {{page}} and {{pages}} stay for the renderer.
	Header [3]string `json:"-"`
	Footer [3]string `json:"-"`
}

// ContractSorts are the keys the contract list sorts by (the store maps
// each to its SQL); DefaultContractSort is the order without sort_by.
var ContractSorts = []string{"contract_number", "name", "company_name", "deal_title", "status",
	"effective_date", "termination_date", "created_at", "updated_at"}

// DefaultContractSort orders the list by number.
const DefaultContractSort = "contract_number"

// MaxExpiringWithin bounds expiring_within: a hundred years of days.
const MaxExpiringWithin = 36500

// ListFilter is one page of the contract list: the common list query and
// the list's own filters.
type ListFilter struct {
	list.Query
	Statuses       []string
	DealID         *int64
	ExpiringWithin *int
	// Today anchors expiring_within; the service sets it.
	Today time.Time
}

// Deals is the deals context as contracts reads it: a deal's merge data,
// decoded into the caller's projection (MergeData), dealsapi.ErrNotFound
// for a deal deals does not know. dealsapi's client satisfies it.
type Deals interface {
	Merge(ctx context.Context, dealID int64, out any) error
}

// Renderer renders a PDF or DOCX (pkg/renderq's Client); user is whose
// render it is, for the per-user limit of renders in flight.
type Renderer interface {
	Render(ctx context.Context, job renderq.Job, prio renderq.Priority, user string) ([]byte, error)
}

// NewExecutedFile is a validated signed copy ready to store.
type NewExecutedFile struct {
	Filename   string
	Size       int64
	SHA256     string
	UploadedBy *int64
	// Data streams the bytes; it is read once, inside the transaction.
	Data io.Reader
}

// Store is the contracts context's persistence.
type Store interface {
	// ContractOwner returns who may change a contract (not found is a
	// fault.NotFound error).
	ContractOwner(ctx context.Context, id int64) (directory.Owner, error)
	// CanWrite is directory.CheckWrite on this context's read model.
	CanWrite(ctx context.Context, o directory.Owner) error
	ListTemplates(ctx context.Context) ([]Template, error)
	GetTemplate(ctx context.Context, id int64) (Template, error)
	CreateTemplate(ctx context.Context, t Template) (Template, error)
	UpdateTemplate(ctx context.Context, t Template) (Template, error)
	DeleteTemplate(ctx context.Context, id int64) error

	// CreateContract numbers c in the transaction that inserts it: it
	// takes the next number of (prefix, year), calls finish (which may use
	// the number, e.g. to resolve {{contract.number}}) and inserts.
	CreateContract(ctx context.Context, c Contract, prefix string, year int, finish func(*Contract) error) (Contract, error)
	GetContract(ctx context.Context, id int64) (Contract, error)
	ListContracts(ctx context.Context, f ListFilter) ([]Contract, int, error)
	// UpdateContract locks the row, lets apply change it, and saves it.
	UpdateContract(ctx context.Context, id int64, apply func(*Contract) error) (Contract, error)
	// DeleteContract locks the contract, calls allow with whether it has a
	// signed copy (read after the lock is held, so no concurrent upload can
	// slip in between) and, if allow returns nil, deletes it with its
	// notes, tasks and signed copy.
	DeleteContract(ctx context.Context, id int64, allow func(hasSignedCopy bool) error) error
	ContractExists(ctx context.Context, id int64) error

	// PutExecutedFile stores the signed copy, replacing any existing one.
	// apply runs on the locked contract before anything is written, with
	// replacing reporting whether a copy exists (read after the lock is
	// held); an error from apply leaves everything unchanged, otherwise
	// its changes are saved with the new copy.
	PutExecutedFile(ctx context.Context, id int64, f NewExecutedFile, apply func(c *Contract, replacing bool) error) (Contract, error)
	// StreamExecutedFile streams the signed copy to the writer start
	// returns once the metadata is known; not_found names the contract
	// when it is missing, else the signed copy.
	StreamExecutedFile(ctx context.Context, id int64, start func(ExecutedFile) (io.Writer, error)) error
	DeleteExecutedFile(ctx context.Context, id int64, apply func(*Contract) error) (Contract, error)

	// ExpireAndRenew processes contracts past their termination date as of
	// today; see Service.RunExpiry.
	ExpireAndRenew(ctx context.Context, today time.Time, batch int) (ExpiryResult, error)
}

// ErrDueLocked reports that an expiry run left due contracts behind because
// another transaction held their rows longer than the run waits; the run
// is to be retried (the expiry task returns it, so asynq retries the day).
var ErrDueLocked = errors.New("contracts: due contracts are locked by another transaction")

// ExpiryResult counts what one expiry run changed.
type ExpiryResult struct {
	Expired int `json:"expired"`
	Renewed int `json:"renewed"`
}
