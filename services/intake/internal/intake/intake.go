// Package intake is the public lead-intake context: it accepts lead
// submissions made with an API key, writes each one to a durable log before
// anything else happens, and forwards it to the leads context exactly once
// (idempotent internal call), retrying in the background while leads is down.
package intake

import (
	"context"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/intakeapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/validate"
)

// Submission statuses.
const (
	// StatusPending is stored but not yet created in leads.
	StatusPending = "pending"
	// StatusDelivered has become lead LeadID.
	StatusDelivered = "delivered"
	// StatusFailed was refused by leads or ran out of attempts.
	StatusFailed = "failed"
	// StatusSpam filled the honeypot field and is never forwarded.
	StatusSpam = "spam"
)

// Statuses lists every status, for filters.
var Statuses = []string{StatusPending, StatusDelivered, StatusFailed, StatusSpam}

// DefaultSource is the lead source when the submitter names none.
const DefaultSource = "public-api"

// DefaultRateLimit applies when a key carries no positive limit.
const DefaultRateLimit = 60

// MaxBody is the largest accepted request body (64 KiB).
const MaxBody = 64 << 10

// Key is a verified API key as identity describes it.
type Key struct {
	ID                 int64    `json:"id"`
	Name               string   `json:"name"`
	Prefix             string   `json:"prefix"`
	RateLimitPerMinute int      `json:"rate_limit_per_minute"`
	AllowedOrigins     []string `json:"allowed_origins"`
}

// Limit is the key's per-minute quota, defaulting when unset.
func (k Key) Limit() int {
	if k.RateLimitPerMinute <= 0 {
		return DefaultRateLimit
	}
	return k.RateLimitPerMinute
}

// Input is the body of intakeapi.SubmitLead. Website is the honeypot: a
// field hidden from humans in the form, which only bots fill in.
type Input = intakeapi.LeadSubmission

// Normalize trims every field and applies the default source.
func Normalize(in *Input) {
	for _, p := range []*string{&in.FirstName, &in.LastName, &in.Email, &in.Phone,
		&in.Company, &in.JobTitle, &in.Source, &in.Website} {
		*p = strings.TrimSpace(*p)
	}
	if in.Source == "" {
		in.Source = DefaultSource
	}
}

// Validate reports every invalid field of a normalised input at once (one
// validation fault).
func Validate(in Input) error {
	var e validate.Errors
	// The lead's own rules (leadsapi), so a submission accepted here is a
	// lead leads accepts; the email is required here besides.
	leadsapi.CheckName(&e, "first_name", in.FirstName)
	leadsapi.CheckName(&e, "last_name", in.LastName)
	if e.Required("email", in.Email) {
		leadsapi.CheckEmail(&e, "email", in.Email)
	}
	e.MaxLen("phone", in.Phone, validate.MaxString)
	e.MaxLen("company", in.Company, validate.MaxString)
	e.MaxLen("job_title", in.JobTitle, validate.MaxString)
	e.MaxLen("source", in.Source, validate.MaxString)
	e.MaxLen("notes", in.Notes, validate.MaxContent)
	return e.Err()
}

// IsSpam reports a filled honeypot.
func IsSpam(in Input) bool { return in.Website != "" }

// Submission is one entry of the durable log: the admin view
// (intakeapi.Submission) and the name its API key had when it was
// submitted, which with the key's id is who creates its lead (Actor), not
// shown in the admin view.
type Submission struct {
	intakeapi.Submission
	APIKeyName string `json:"-"`
}

// Actor is who a submission's lead is created by in leads' record history:
// the API key it was submitted with, as the key was named then. It is
// stored with the submission, so the retry job delivering it later, with
// no request around, creates the lead as the same actor.
func Actor(s Submission) historyapi.HistoryActor {
	id := s.APIKeyID
	return historyapi.HistoryActor{Type: historyapi.ActorAPIKey, ID: &id, Name: s.APIKeyName}
}

// LeadOf is the lead forwarded to leads. It is built from the stored
// submission only, so every retry asks for the same lead and leads'
// idempotency store recognises it.
func LeadOf(s Submission) leadsapi.LeadInput {
	return leadsapi.LeadInput{FirstName: s.FirstName, LastName: s.LastName, Email: patch.Of(s.Email),
		Phone: unlessEmpty(s.Phone), Company: unlessEmpty(s.Company), JobTitle: unlessEmpty(s.JobTitle),
		Source: patch.Of(s.Source), Notes: unlessEmpty(s.Notes)}
}

// unlessEmpty leaves an empty optional field out of the lead.
func unlessEmpty(v string) patch.Field[string] {
	if v == "" {
		return patch.Field[string]{}
	}
	return patch.Of(v)
}

// NewSubmission is what Accept stores.
type NewSubmission struct {
	APIKeyID int64
	// APIKeyName is the key's name (Submission.APIKeyName).
	APIKeyName string
	Status     string
	Input      Input
	Origin     string
	// Lease delays the retry job while the request itself forwards the
	// submission, so the two do not race.
	Lease time.Duration
}

// Idem is one Idempotency-Key of one API key.
type Idem struct {
	APIKeyID int64
	Key      string
	Hash     []byte
}

// Receipt is what a submission came to, as its submitter is told and,
// under an Idempotency-Key, told again: a lead, a submission waiting for
// leads, or leads' refusal of the lead. The edge turns it into the answer.
type Receipt struct {
	// LeadID is the created lead; for a spam submission it is the
	// submission's id, so a bot cannot tell it was caught.
	LeadID int64
	// QueuedID is the submission waiting for leads.
	QueuedID int64
	// Refusal is leads' refusal of the lead, passed on as leads gave it.
	Refusal *fault.Error
	// Replayed marks a receipt given again for an Idempotency-Key.
	Replayed bool
}

// Outcome names the receipt's kind for metrics: created, queued or failed.
func (r Receipt) Outcome() string {
	switch {
	case r.Refusal != nil:
		return "failed"
	case r.QueuedID != 0:
		return "queued"
	default:
		return "created"
	}
}

// Accepted is the result of Store.Accept: either a fresh submission, or a
// stored answer to replay, or (Orphan) the submission of an earlier request
// with the same key that died before it answered.
type Accepted struct {
	Submission Submission
	Replay     *Receipt
	Orphan     *Submission
}

// Outcome is the state a delivery attempt leaves a submission in.
type Outcome struct {
	ID            int64
	Status        string
	LeadID        *int64
	NextAttemptAt time.Time
	LastError     string
	// Idem and Receipt, when set, complete the idempotency record in the
	// same transaction.
	Idem    *Idem
	Receipt *Receipt
}

// Filter is what the admin list asks for: the common list query and the
// log's own filters.
type Filter struct {
	list.Query
	Status   string
	APIKeyID *int64
}

// SortKeys are the public sort keys of the admin list; DefaultSort is its
// order without sort_by.
var SortKeys = []string{"created_at", "updated_at", "status", "email", "attempts", "id"}

// DefaultSort is the admin list's order without sort_by.
const DefaultSort = "created_at"

// Store is the durable log.
type Store interface {
	// Accept stores a submission and, when idem is set, reserves the key in
	// the same transaction (or returns what the key already holds).
	Accept(ctx context.Context, n NewSubmission, idem *Idem) (Accepted, error)
	// AcceptMany stores submissions without a key in one transaction.
	AcceptMany(ctx context.Context, ns []NewSubmission) ([]Submission, error)
	// Finish records the outcome of a delivery attempt.
	Finish(ctx context.Context, o Outcome) error
	// FinishMany records several outcomes in one transaction.
	FinishMany(ctx context.Context, outs []Outcome) error
	// CompleteIdem stores the receipt of a key whose request died.
	CompleteIdem(ctx context.Context, idem Idem, r Receipt) error
	// ClaimDue leases up to limit due pending submissions for this replica;
	// rows another replica holds are skipped (FOR UPDATE SKIP LOCKED).
	ClaimDue(ctx context.Context, limit int, lease time.Duration) ([]Submission, error)
	// List returns one page of submissions and the total count.
	List(ctx context.Context, f Filter) ([]Submission, int, error)
	// Get returns one submission or a 404.
	Get(ctx context.Context, id int64) (Submission, error)
	// PurgeIdem deletes idempotency records created before t.
	PurgeIdem(ctx context.Context, before time.Time) (int64, error)
}

// Leads creates leads in the leads context; *leadsapi.Client is one.
type Leads interface {
	// CreateLeads makes each lead once per key in one call. The error is
	// for the call (leads unreachable); a refusal of one lead is that
	// lead's Err.
	CreateLeads(ctx context.Context, leads []leadsapi.NewLead) ([]leadsapi.CreatedLead, error)
	// DuplicateOf names the contact, else the lead, an address already
	// belongs to (nil when none).
	DuplicateOf(ctx context.Context, email string) (*leadsapi.DuplicateOf, error)
}

// Keys verifies API key secrets.
type Keys interface {
	// Verify returns the key, an unauthenticated fault when it is unknown
	// or revoked, another error when identity cannot answer.
	Verify(ctx context.Context, secret string) (Key, error)
}

// Quota is the state of a key's rate-limit window after one request.
type Quota struct {
	Allowed   bool
	Limit     int
	Remaining int
	// Reset is the time until the window starts over.
	Reset time.Duration
}

// Limiter counts requests per key.
type Limiter interface {
	Take(ctx context.Context, keyID int64, limit int) (Quota, error)
}
