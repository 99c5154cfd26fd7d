package leads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/validate"
)

// Store is the leads schema. Every write that changes a lead records its
// event in the same transaction.
type Store interface {
	// Owner returns a lead's assignee and creator (not found is a
	// fault.NotFound error), for write access.
	Owner(ctx context.Context, id int64) (directory.Owner, error)
	// CanWrite is directory.CheckWrite on this context's read model.
	CanWrite(ctx context.Context, o directory.Owner) error
	Create(ctx context.Context, l Lead) (Lead, error)
	// CreateOnce is Create guarded by an Idempotency-Key: the lead created
	// first is returned again for the same key and request.
	CreateOnce(ctx context.Context, key string, request any, l Lead) (idempotency.Done[Lead], error)
	// CreateManyOnce is CreateOnce for a batch in one transaction: one
	// result per lead, in order; ls[i] is its own request fingerprint, as
	// the Lead is CreateOnce's request, so single and batch retries of a key
	// agree.
	CreateManyOnce(ctx context.Context, keys []string, ls []Lead) ([]idempotency.Settled[Lead], error)
	// Get returns fault.NotFound for an unknown id.
	Get(ctx context.Context, id int64) (Lead, error)
	// Update locks the lead, runs change on it as committed and stores
	// the result, in one transaction: what change leaves alone (the
	// status a qualification just set, say) is never overwritten by an
	// older read.
	Update(ctx context.Context, id int64, change func(*Lead) error) (Lead, error)
	// Disqualify sets status and reason, from any state.
	Disqualify(ctx context.Context, id int64, reason *string) (Lead, error)
	Delete(ctx context.Context, id int64) error
	List(ctx context.Context, f Filter) ([]Lead, int, error)
	UserExists(ctx context.Context, id int64) (bool, error)
	// Definitions lists the installation's custom fields of leads.
	Definitions(ctx context.Context) ([]customfield.Definition, error)
	// Lookup finds the lead holding value of the unique field d.
	Lookup(ctx context.Context, d customfield.Definition, value string) (id int64, found bool, err error)
	Batcher
	// Mover repoints leads for a merge of contacts or companies.
	Mover
	// Matcher finds the lead an address repeats.
	Matcher

	// BeginQualification takes the lead's saga lease (409 while another
	// attempt holds it) and returns the progress of earlier attempts.
	BeginQualification(ctx context.Context, leadID int64, lease time.Duration) (Saga, error)
	// SaveQualification persists progress after each step.
	SaveQualification(ctx context.Context, leadID int64, s Saga) error
	// FinishQualification marks the lead qualified with the saga's ids.
	FinishQualification(ctx context.Context, leadID int64, s Saga) (Lead, error)
	// ReleaseQualification saves an unfinished attempt's progress and
	// drops its lease.
	ReleaseQualification(ctx context.Context, leadID int64, s Saga) error
}

// Contacts is the part of the contacts context's internal API leads use.
// *contactsapi.Client implements it; the bodies sent are encoded
// contactsapi requests, persisted by the saga before each call.
type Contacts interface {
	SendContact(ctx context.Context, idemKey string, body json.RawMessage) (int64, error)
	SendCompany(ctx context.Context, idemKey string, body json.RawMessage) (int64, error)
	ContactExists(ctx context.Context, id int64) (bool, error)
	CompanyExists(ctx context.Context, id int64) (bool, error)
	MatchCompanies(ctx context.Context, name string, limit int) ([]json.RawMessage, error)
	MatchContacts(ctx context.Context, email string) ([]json.RawMessage, error)
}

// Deals is the part of the deals context's internal API leads use.
// *dealsapi.Client implements it.
type Deals interface {
	SendDeal(ctx context.Context, idemKey string, body json.RawMessage) (int64, error)
	StageExists(ctx context.Context, id int64) (bool, error)
}

// Fields reads the custom-field definitions of an object another context
// owns (GET /internal/properties/{object}); *propertyapi.Client
// implements it.
type Fields interface {
	List(ctx context.Context, object string) ([]propertyapi.Property, error)
}

// Upstreams are the other contexts a lead becomes records of: their
// internal APIs and the definitions of their objects.
type Upstreams struct {
	Contacts Contacts
	Deals    Deals
	// ContactFields and DealFields read the custom fields of contacts
	// and of deals, for the values a qualification carries over.
	ContactFields, DealFields Fields
}

// Service holds the context's use cases.
type Service struct {
	store    Store
	contacts Contacts
	deals    Deals
	// contactFields and dealFields are Upstreams'.
	contactFields, dealFields Fields
	// lease bounds how long one qualification attempt holds its lead; it
	// outlives the three upstream calls' timeouts.
	lease time.Duration
}

// NewService wires the use cases.
func NewService(store Store, up Upstreams) (*Service, error) {
	if store == nil || up.Contacts == nil || up.Deals == nil || up.ContactFields == nil || up.DealFields == nil {
		return nil, errors.New("leads: store, contacts and deals (and their fields) are required")
	}
	return &Service{store: store, contacts: up.Contacts, deals: up.Deals,
		contactFields: up.ContactFields, dealFields: up.DealFields, lease: 60 * time.Second}, nil
}

// Owner is whom a lead belongs to, for the edge's edit-scope guard.
func (s *Service) Owner(ctx context.Context, id int64) (directory.Owner, error) {
	return s.store.Owner(ctx, id)
}

// CanWrite refuses a caller outside the owner's edit scope.
func (s *Service) CanWrite(ctx context.Context, o directory.Owner) error {
	return s.store.CanWrite(ctx, o)
}

// UserExists reports whether a user may be named as an assignee.
func (s *Service) UserExists(ctx context.Context, id int64) (bool, error) {
	return s.store.UserExists(ctx, id)
}

// Definitions are the custom fields a lead may hold, by position: what a
// write is checked against and what the CSV columns follow.
func (s *Service) Definitions(ctx context.Context) ([]customfield.Definition, error) {
	return s.store.Definitions(ctx)
}

// Writable answers 403 unless the caller may change the lead (its notes
// and tasks, qualification and disqualification follow it), 404 when it
// does not exist.
func (s *Service) Writable(ctx context.Context, id int64) error {
	o, err := s.store.Owner(ctx, id)
	if err != nil {
		return err
	}
	return s.store.CanWrite(ctx, o)
}

// Create validates and stores a new lead.
func (s *Service) Create(ctx context.Context, in Input, createdBy *int64) (Lead, error) {
	defs, err := s.store.Definitions(ctx)
	if err != nil {
		return Lead{}, err
	}
	l := Lead{CreatedBy: createdBy}
	if err := ApplyAll(ctx, &l, in, defs, s.store.UserExists); err != nil {
		return Lead{}, err
	}
	return s.store.Create(ctx, l)
}

// CreateOnce is Create for the internal API: retried calls with the same
// Idempotency-Key create one lead, and get it back.
func (s *Service) CreateOnce(ctx context.Context, key string, in Input) (idempotency.Done[Lead], error) {
	defs, err := s.internalDefinitions(ctx)
	if err != nil {
		return idempotency.Done[Lead]{}, err
	}
	var l Lead
	if err := ApplyAll(ctx, &l, in, defs, s.store.UserExists); err != nil {
		return idempotency.Done[Lead]{}, err
	}
	return s.store.CreateOnce(ctx, key, l, l)
}

// internalDefinitions are the definitions an internal create checks
// against: none required. Its callers forward what people submitted
// elsewhere (intake's public form), who cannot know this installation's
// required fields; refusing their leads would lose them.
func (s *Service) internalDefinitions(ctx context.Context) ([]customfield.Definition, error) {
	defs, err := s.store.Definitions(ctx)
	if err != nil {
		return nil, err
	}
	for i := range defs {
		defs[i].Required = false
	}
	return defs, nil
}

// MaxBatch bounds the leads of one internal batch create: enough for a
// caller to amortise the call and the transaction, small enough that one
// batch holds its key locks only briefly.
const MaxBatch = 50

// BatchItem is one lead of an internal batch create.
type BatchItem struct {
	// Key is the item's Idempotency-Key; every item needs one.
	Key   string
	Input Input
	// Err, when set, is the item's answer without reading Input (its body
	// could not be decoded, say); the item creates nothing.
	Err error
}

// CreateManyOnce is CreateOnce for up to MaxBatch leads in one store call.
// Each item gets exactly the result CreateOnce would give it (its own
// validation fault, the stored lead, a conflict for a reused key, or a new
// lead), so one bad item never fails the others. A batch without items,
// with more than MaxBatch, or with a missing or oversized key is one
// validation fault for the whole request.
func (s *Service) CreateManyOnce(ctx context.Context, items []BatchItem) ([]idempotency.Settled[Lead], error) {
	var v validate.Errors
	if len(items) == 0 || len(items) > MaxBatch {
		v.Add("items", "must hold between 1 and %d items", MaxBatch)
	}
	for i, it := range items {
		field := fmt.Sprintf("items[%d].key", i)
		if v.Required(field, it.Key) && len(it.Key) > idempotency.MaxKeyLength {
			v.Add(field, "must be at most %d characters", idempotency.MaxKeyLength)
		}
	}
	if err := v.Err(); err != nil {
		return nil, err
	}

	defs, err := s.internalDefinitions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]idempotency.Settled[Lead], len(items))
	users := knownUsers(s.store.UserExists)
	var keys []string
	var ls []Lead
	var at []int // index in items of keys[j], ls[j]
	for i, it := range items {
		if it.Err != nil {
			out[i].Err = it.Err
			continue
		}
		var l Lead
		if err := ApplyAll(ctx, &l, it.Input, defs, users); err != nil {
			// A refusal (a fault, or a dependency's answer) is the item's;
			// anything else fails the batch.
			var refusal fault.Coder
			if !errors.As(err, &refusal) {
				return nil, err
			}
			out[i].Err = err
			continue
		}
		keys, ls, at = append(keys, it.Key), append(ls, l), append(at, i)
	}
	if len(ls) == 0 {
		return out, nil
	}
	res, err := s.store.CreateManyOnce(ctx, keys, ls)
	if err != nil {
		return nil, err
	}
	if len(res) != len(ls) {
		return nil, fmt.Errorf("leads: store answered %d of %d leads", len(res), len(ls))
	}
	for j, i := range at {
		out[i] = res[j]
	}
	return out, nil
}

// knownUsers remembers check's answers for one batch, so items assigned to
// the same user cost one lookup; the rule is check's.
func knownUsers(check UserChecker) UserChecker {
	seen := map[int64]bool{}
	return func(ctx context.Context, id int64) (bool, error) {
		if ok, done := seen[id]; done {
			return ok, nil
		}
		ok, err := check(ctx, id)
		if err != nil {
			return false, err
		}
		seen[id] = ok
		return ok, nil
	}
}

// prefetch asks users (a knownUsers) about every user in names: the
// assignee and user custom fields, so a write that applies in inside its
// transaction later gets the answers from memory.
func prefetch(ctx context.Context, users UserChecker, defs []customfield.Definition, in Input) error {
	ids := []int64{}
	if a := in.AssignedTo; a.Set && !a.Null && a.Value > 0 {
		ids = append(ids, a.Value)
	}
	for _, d := range defs {
		var id int64
		if d.Type == customfield.User && json.Unmarshal(in.CustomFields[d.Name], &id) == nil && id > 0 {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		if _, err := users(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// Get reads one lead.
func (s *Service) Get(ctx context.Context, id int64) (Lead, error) { return s.store.Get(ctx, id) }

// Update applies a PUT body: names required, absent fields kept. The body
// is applied to the lead locked in the write transaction, so an absent
// status keeps the status committed then: a PUT racing a qualification
// cannot turn the qualified lead back into the status it read before. A
// status given is set whatever the current one (PUT is the raw edit).
func (s *Service) Update(ctx context.Context, id int64, in Input) (Lead, error) {
	// The assignee and the users custom fields name are looked up before
	// the transaction, so the locked lead waits for no other query and no
	// second pool connection.
	defs, err := s.store.Definitions(ctx)
	if err != nil {
		return Lead{}, err
	}
	users := knownUsers(s.store.UserExists)
	if err := prefetch(ctx, users, defs, in); err != nil {
		return Lead{}, err
	}
	return s.store.Update(ctx, id, func(l *Lead) error { return ApplyAll(ctx, l, in, defs, users) })
}

// Delete removes a lead with its notes and tasks.
func (s *Service) Delete(ctx context.Context, id int64) error { return s.store.Delete(ctx, id) }

// List returns one page and the total.
func (s *Service) List(ctx context.Context, f Filter) ([]Lead, int, error) {
	return s.store.List(ctx, f)
}

// Disqualify marks the lead disqualified with an optional reason, from any
// state. A qualified lead keeps the ids and time of its
// qualification as history; the contact, company and deal stay as they are.
func (s *Service) Disqualify(ctx context.Context, id int64, reason *string) (Lead, error) {
	if reason != nil {
		r := strings.TrimSpace(*reason)
		var v validate.Errors
		v.MaxLen("reason", r, MaxReason)
		if err := v.Err(); err != nil {
			return Lead{}, err
		}
		reason = &r
		if r == "" {
			reason = nil
		}
	}
	return s.store.Disqualify(ctx, id, reason)
}

// MatchLimit bounds how many similar companies are returned.
const MatchLimit = 10

// MatchCompanies finds existing companies similar to name, best first.
func (s *Service) MatchCompanies(ctx context.Context, name string) ([]json.RawMessage, error) {
	return match(ctx, "company", name, func(ctx context.Context, name string) ([]json.RawMessage, error) {
		return s.contacts.MatchCompanies(ctx, name, MatchLimit)
	})
}

// MatchContacts finds existing contacts with the email (case-insensitive).
func (s *Service) MatchContacts(ctx context.Context, email string) ([]json.RawMessage, error) {
	return match(ctx, "email", email, s.contacts.MatchContacts)
}

// match asks find for the trimmed term: none for a blank one, a 422 on
// field for an overlong one, and an empty list rather than null.
func match(ctx context.Context, field, term string,
	find func(context.Context, string) ([]json.RawMessage, error)) ([]json.RawMessage, error) {
	term = strings.TrimSpace(term)
	if term == "" {
		return []json.RawMessage{}, nil
	}
	if len([]rune(term)) > validate.MaxString {
		return nil, fault.Invalidf(field, "must be at most %d characters", validate.MaxString)
	}
	items, err := find(ctx, term)
	if err != nil {
		return nil, err
	}
	if items == nil {
		items = []json.RawMessage{}
	}
	return items, nil
}
