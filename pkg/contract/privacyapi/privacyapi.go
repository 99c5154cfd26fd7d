// Package privacyapi is the contract of a person's rights over their data
// (access, portability, erasure): the admin routes identity serves for
// exports and erasures, and the internal API every context holding
// personal data serves for them (export its part, erase its part once).
//
// A request names a person by e-mail address. Identity runs it as a saga
// in Phases: the first phase's contexts find the person's records by the
// address, and the ids they answer (Found) travel to the next phases,
// whose records only point at the person.
package privacyapi

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/opencrm/crm/pkg/timestamp"
)

// Service is the context that runs privacy requests: identity, which
// already keeps the audit log and every admin credential.
const Service = "identity"

// Statuses of an export or an erasure, and of one context's step.
const (
	StatusPending   = "pending"
	StatusRunning   = "running"
	StatusCompleted = "completed"
)

// Erased is the value an erasure leaves where a person's value was (in
// history, the events feed, webhook delivery logs).
const Erased = "[erased]"

// The contexts' names as a receipt and an export document name them; each
// is the context's Service name.
const (
	Contacts  = "contacts"
	Leads     = "leads"
	Deals     = "deals"
	Mail      = "mail"
	Intake    = "intake"
	Contracts = "contracts"
	Webhooks  = "webhooks"
	Identity  = "identity"
)

// Phases orders the saga. Contacts and leads find the person by address;
// deals, mail and intake then get their contact and lead ids; contracts
// need the deals those contacts were party to; the events feed and the
// delivery logs go last so that the deletions the earlier phases publish
// are redacted too.
var Phases = [][]string{{Contacts, Leads}, {Deals, Mail, Intake}, {Contracts, Webhooks}}

// Contexts are the contexts a request visits, in phase order.
var Contexts = slices.Concat(Phases...)

// Reasons for keeping a record an erasure would otherwise remove.
const (
	// KeptExecutedContract: a signed contract is a legal record the
	// business must retain (commercial and tax law); the person's
	// contact is unlinked from its deal but the document stays.
	KeptExecutedContract = "executed contract retained as a legal record"
)

// Subject names the person a context is asked about: the address, and
// the records the earlier phases found (empty in the first phase).
type Subject struct {
	Email      string  `json:"email"`
	ContactIDs []int64 `json:"contact_ids,omitempty"`
	LeadIDs    []int64 `json:"lead_ids,omitempty"`
	DealIDs    []int64 `json:"deal_ids,omitempty"`
}

// Found are the ids a context answers for the later phases: the
// person's contacts and leads (contacts, leads) and the deals a contact
// of theirs was party to (deals).
type Found struct {
	ContactIDs []int64 `json:"contact_ids,omitempty"`
	LeadIDs    []int64 `json:"lead_ids,omitempty"`
	DealIDs    []int64 `json:"deal_ids,omitempty"`
}

// Merge adds o's ids to f's.
func (f Found) Merge(o Found) Found {
	return Found{
		ContactIDs: slices.Concat(f.ContactIDs, o.ContactIDs),
		LeadIDs:    slices.Concat(f.LeadIDs, o.LeadIDs),
		DealIDs:    slices.Concat(f.DealIDs, o.DealIDs),
	}
}

// ExportPart is one context's answer to an export: what it holds about
// the person as a JSON object (its records by kind, e.g.
// {"contacts":[...],"notes":[...],"history":[...]}), and the ids the
// later phases need.
type ExportPart struct {
	Found
	Data json.RawMessage `json:"data"`
}

// Kept is a record an erasure left in place, and why.
type Kept struct {
	Object string `json:"object" example:"contract"`
	ID     int64  `json:"id" example:"12"`
	Reason string `json:"reason" example:"executed contract retained as a legal record"`
}

// Receipt is what one context did for an erasure: records erased
// (deleted) and redacted (kept with the person's values replaced by
// "[erased]", or unlinked from the person) by kind, and those kept with
// the reason.
type Receipt struct {
	Context  string           `json:"context" example:"contacts"`
	Status   string           `json:"status" enum:"pending,completed" example:"completed"`
	Erased   map[string]int64 `json:"erased" nullable:"false" example:"{\"contacts\":1,\"notes\":2}"`
	Redacted map[string]int64 `json:"redacted" nullable:"false" example:"{\"history\":5}"`
	Kept     []Kept           `json:"kept" nullable:"false"`
}

// ErasePart is one context's answer to an erasure: its receipt and the
// ids the later phases need. A context answers a repeated call for one
// erasure with the first call's part, so every step happens once.
type ErasePart struct {
	Found
	Receipt Receipt `json:"receipt"`
}

// Paths of the internal API every context in Contexts serves.
const (
	PathExport   = "/internal/privacy/export"
	PathErasures = "/internal/privacy/erasures"

	// RouteExport answers the context's ExportPart for the Subject in
	// the body: 200 {"data":ExportPart}.
	RouteExport = "POST " + PathExport
	// RouteErase erases the context's part for the Subject in the body,
	// once per erasure id: 200 {"data":ErasePart}.
	RouteErase = "POST " + PathErasures + "/{id}"
)

// ErasurePath is the internal path of erasure id.
func ErasurePath(id int64) string { return PathErasures + "/" + strconv.FormatInt(id, 10) }

// ErasureKey is the idempotency key a context stores erasure id's part
// under.
func ErasureKey(id int64) string { return "privacy-erasure-" + strconv.FormatInt(id, 10) }

// The public wire types.

// ExportRequest asks for everything held about a person.
type ExportRequest struct {
	Email string `json:"email" format:"email" example:"ann@example.com"`
}

// ErasureRequest asks to erase a person.
type ErasureRequest struct {
	Email  string `json:"email" format:"email" example:"ann@example.com"`
	Reason string `json:"reason" example:"GDPR Art. 17 request of 2026-11-02"`
}

// Document is an export's result: every context's part, by context name.
type Document struct {
	Email       string                     `json:"email" example:"ann@example.com"`
	GeneratedAt timestamp.Time             `json:"generated_at"`
	Contexts    map[string]json.RawMessage `json:"contexts" description:"What each context holds about the person, by context name (contacts, leads, deals, mail, intake, contracts, webhooks)."`
}

// Export is a person's export job; Document is set once completed.
type Export struct {
	ID          int64           `json:"id" example:"3"`
	Status      string          `json:"status" enum:"pending,running,completed" example:"completed"`
	RequestedAt timestamp.Time  `json:"requested_at"`
	CompletedAt *timestamp.Time `json:"completed_at"`
	Document    *Document       `json:"document" description:"The export, once completed; null before."`
}

// Erasure is a person's erasure: its state and one receipt per context.
// The address is not kept past the request: an erasure names its person
// by nothing but its id.
type Erasure struct {
	ID          int64           `json:"id" example:"5"`
	Status      string          `json:"status" enum:"pending,running,completed" example:"completed"`
	Reason      string          `json:"reason" example:"GDPR Art. 17 request of 2026-11-02"`
	RequestedAt timestamp.Time  `json:"requested_at"`
	CompletedAt *timestamp.Time `json:"completed_at"`
	Receipts    []Receipt       `json:"receipts" nullable:"false"`
}
