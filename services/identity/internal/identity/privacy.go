package identity

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/pkg/validate"
)

// A person's privacy requests (privacyapi): identity stores each export
// and erasure as a saga and runs it across the contexts in
// privacyapi.Phases, in the background, for the admin who asked.

// The kinds of privacy request.
const (
	KindExport  = "export"
	KindErasure = "erasure"
)

// EventErased is the event identity publishes on its stream
// (directory.Stream) when an erasure completes; its data is ErasedEvent.
const EventErased = "privacy.erased"

// ErasedEvent is privacy.erased's data: the erasure and what each context
// did, in numbers. It carries nothing about the person.
type ErasedEvent struct {
	ErasureID int64                    `json:"erasure_id"`
	Counts    map[string]ReceiptCounts `json:"counts"`
}

// ReceiptCounts is one context's receipt in numbers: records erased and
// redacted by kind, and how many were kept.
type ReceiptCounts struct {
	Erased   map[string]int64 `json:"erased"`
	Redacted map[string]int64 `json:"redacted"`
	Kept     int              `json:"kept"`
}

// Errors of privacy requests.
var (
	ErrExportNotFound  = fault.NotFound("export")
	ErrErasureNotFound = fault.NotFound("erasure")
	// ErrErasureRunning refuses an export while the person is being
	// erased: it would read what the erasure is removing.
	ErrErasureRunning = fault.Conflict("erasure_running", "an erasure of this person is running; export after it completed")
	// ErrPrivacyGone is a request deleted while it ran (an export its
	// person's erasure removed): the runner stops working it.
	ErrPrivacyGone = errors.New("identity: privacy request gone")
)

// PrivacyJob is a privacy request as stored: the saga's state.
type PrivacyJob struct {
	Kind string
	ID   int64
	// Email is the person's address while the request runs; "" once
	// completed.
	Email  string
	Reason string
	Status string
	// Phase is the first phase of privacyapi.Phases not fully answered.
	Phase int
	// Parts are the contexts' answers so far (ExportPart or ErasePart).
	Parts map[string]json.RawMessage
	// Actor is the admin who asked: the contexts record the changes as
	// theirs.
	Actor       historyapi.HistoryActor
	Document    json.RawMessage
	RequestedAt time.Time
	CompletedAt *time.Time
	Attempts    int
}

// PrivacyRequest is a request to store.
type PrivacyRequest struct {
	Kind   string
	Hash   []byte
	Email  string
	Reason string
	Actor  historyapi.HistoryActor
}

// PrivacyStore stores the privacy requests.
type PrivacyStore interface {
	// CreatePrivacy stores r with its audit entry. An erasure of a person
	// who has one already answers that one (created false); an export is
	// refused with ErrErasureRunning while an erasure of the person has
	// not completed.
	CreatePrivacy(ctx context.Context, r PrivacyRequest) (PrivacyJob, bool, error)
	// PrivacyJob is one request (ErrExportNotFound, ErrErasureNotFound).
	PrivacyJob(ctx context.Context, kind string, id int64) (PrivacyJob, error)
	// ClaimPrivacy leases up to limit due requests (erasures first) for
	// lease: nobody else claims them meanwhile.
	ClaimPrivacy(ctx context.Context, lease time.Duration, limit int) ([]PrivacyJob, error)
	// SavePrivacyPart stores a context's answer and renews the lease;
	// ErrPrivacyGone when the request was deleted.
	SavePrivacyPart(ctx context.Context, kind string, id int64, context string, part json.RawMessage, lease time.Duration) error
	// AdvancePrivacy moves the request to phase, resetting its attempts.
	AdvancePrivacy(ctx context.Context, kind string, id int64, phase int, lease time.Duration) error
	// DelayPrivacy makes the request due again after delay, counting a
	// failed attempt and why.
	DelayPrivacy(ctx context.Context, kind string, id int64, delay time.Duration, reason string) error
	// CompleteExport stores the document and forgets the address; an
	// export that an erasure of the person overtook is deleted instead
	// (ErrPrivacyGone).
	CompleteExport(ctx context.Context, id int64, doc privacyapi.Document) error
	// PurgeExports deletes the exports completed more than age ago and
	// says how many.
	PurgeExports(ctx context.Context, age time.Duration) (int64, error)
	// CompleteErasure marks the erasure completed, forgets its address,
	// deletes the person's exports, appends person.erased and publishes
	// privacy.erased, in one transaction.
	CompleteErasure(ctx context.Context, id int64, ev ErasedEvent) error
}

// PrivacyPart is one context's internal privacy API (privacyapi.Client).
type PrivacyPart interface {
	Export(ctx context.Context, s privacyapi.Subject) (privacyapi.ExportPart, error)
	Erase(ctx context.Context, id int64, s privacyapi.Subject) (privacyapi.ErasePart, error)
}

// PrivacyConfig tunes the runner.
type PrivacyConfig struct {
	// HashKey keys the address's HMAC (at least 32 bytes).
	HashKey []byte
	// Poll is how often the runner looks for due requests when nothing
	// woke it.
	Poll time.Duration
	// RetryBase and RetryMax bound the backoff of a request whose context
	// failed: RetryBase doubled per failed attempt, at most RetryMax.
	RetryBase, RetryMax time.Duration
	// Lease is how long a claimed request is left to its runner before
	// another may take it (renewed at every answer).
	Lease time.Duration
	// Batch is how many requests one claim takes.
	Batch int
	// ExportRetention is how long a completed export's document is kept:
	// it is a copy of everything held about the person.
	ExportRetention time.Duration
}

// DefaultPrivacyConfig is the runner's production tuning (the key aside).
func DefaultPrivacyConfig() PrivacyConfig {
	return PrivacyConfig{Poll: 5 * time.Second, RetryBase: time.Second, RetryMax: 30 * time.Second,
		Lease: 5 * time.Minute, Batch: 10, ExportRetention: 7 * 24 * time.Hour}
}

// MinPrivacyHashKey is the shortest key the address hash takes.
const MinPrivacyHashKey = 32

// Privacy runs the privacy requests.
type Privacy struct {
	store PrivacyStore
	parts map[string]PrivacyPart
	cfg   PrivacyConfig
	log   *slog.Logger
	kick  chan struct{}
}

// NewPrivacy wires the requests' use cases and runner; parts needs one
// part per context of privacyapi.Contexts.
func NewPrivacy(store PrivacyStore, parts map[string]PrivacyPart, cfg PrivacyConfig, log *slog.Logger) (*Privacy, error) {
	if store == nil || log == nil {
		return nil, errors.New("identity: privacy needs a store and a logger")
	}
	if len(cfg.HashKey) < MinPrivacyHashKey {
		return nil, fmt.Errorf("identity: privacy hash key must be at least %d bytes", MinPrivacyHashKey)
	}
	for _, c := range privacyapi.Contexts {
		if parts[c] == nil {
			return nil, fmt.Errorf("identity: privacy needs the %s context", c)
		}
	}
	if cfg.Poll <= 0 || cfg.Lease <= 0 || cfg.RetryBase < 0 || cfg.RetryMax < cfg.RetryBase || cfg.Batch < 1 || cfg.ExportRetention <= 0 {
		return nil, errors.New("identity: privacy runner needs a positive poll, lease, batch and export retention, and 0 <= retry base <= retry max")
	}
	return &Privacy{store: store, parts: parts, cfg: cfg, log: log, kick: make(chan struct{}, 1)}, nil
}

// Hash is the keyed hash a person's requests are found by: HMAC-SHA256
// of the trimmed, lower-cased address.
func (p *Privacy) Hash(email string) []byte {
	m := hmac.New(sha256.New, p.cfg.HashKey)
	m.Write([]byte(strings.ToLower(strings.TrimSpace(email))))
	return m.Sum(nil)
}

// checkAddress trims and validates a request's address.
func checkAddress(v *validate.Errors, email string) string {
	email = strings.TrimSpace(email)
	if v.Required("email", email) && v.MaxLen("email", email, validate.MaxString) {
		v.Email("email", email)
	}
	return email
}

// RequestExport starts an export of everything held about the person.
func (p *Privacy) RequestExport(ctx context.Context, in privacyapi.ExportRequest) (privacyapi.Export, error) {
	var v validate.Errors
	email := checkAddress(&v, in.Email)
	if err := v.Err(); err != nil {
		return privacyapi.Export{}, err
	}
	j, _, err := p.store.CreatePrivacy(ctx, PrivacyRequest{Kind: KindExport, Hash: p.Hash(email), Email: email,
		Actor: requester(ctx)})
	if err != nil {
		return privacyapi.Export{}, err
	}
	p.Kick()
	return exportOf(j)
}

// RequestErasure starts the person's erasure, or answers the one already
// requested for the address.
func (p *Privacy) RequestErasure(ctx context.Context, in privacyapi.ErasureRequest) (privacyapi.Erasure, error) {
	var v validate.Errors
	email := checkAddress(&v, in.Email)
	// Why is part of the record an erasure leaves (accountability): the
	// request, the law or the ticket it answers.
	reason := strings.TrimSpace(in.Reason)
	if v.Required("reason", reason) {
		v.MaxLen("reason", reason, validate.MaxString)
	}
	if err := v.Err(); err != nil {
		return privacyapi.Erasure{}, err
	}
	j, created, err := p.store.CreatePrivacy(ctx, PrivacyRequest{Kind: KindErasure, Hash: p.Hash(email), Email: email,
		Reason: reason, Actor: requester(ctx)})
	if err != nil {
		return privacyapi.Erasure{}, err
	}
	if created {
		p.Kick()
	}
	return erasureOf(j)
}

// requester is who asks: the caller as record history names them.
func requester(ctx context.Context) historyapi.HistoryActor {
	a, ok := history.ActorOf(ctx)
	if !ok {
		return historyapi.HistoryActor{Type: historyapi.ActorSystem}
	}
	return a
}

// Export is one export: its status, then its document.
func (p *Privacy) Export(ctx context.Context, id int64) (privacyapi.Export, error) {
	j, err := p.store.PrivacyJob(ctx, KindExport, id)
	if err != nil {
		return privacyapi.Export{}, err
	}
	return exportOf(j)
}

// Erasure is one erasure: its status and a receipt per context.
func (p *Privacy) Erasure(ctx context.Context, id int64) (privacyapi.Erasure, error) {
	j, err := p.store.PrivacyJob(ctx, KindErasure, id)
	if err != nil {
		return privacyapi.Erasure{}, err
	}
	return erasureOf(j)
}

func stamp(t *time.Time) *timestamp.Time {
	if t == nil {
		return nil
	}
	return &timestamp.Time{Time: t.UTC()}
}

func exportOf(j PrivacyJob) (privacyapi.Export, error) {
	e := privacyapi.Export{ID: j.ID, Status: j.Status, RequestedAt: timestamp.Time{Time: j.RequestedAt.UTC()},
		CompletedAt: stamp(j.CompletedAt)}
	if len(j.Document) > 0 {
		var d privacyapi.Document
		if err := json.Unmarshal(j.Document, &d); err != nil {
			return e, fmt.Errorf("export %d document: %w", j.ID, err)
		}
		e.Document = &d
	}
	return e, nil
}

func erasureOf(j PrivacyJob) (privacyapi.Erasure, error) {
	e := privacyapi.Erasure{ID: j.ID, Status: j.Status, Reason: j.Reason,
		RequestedAt: timestamp.Time{Time: j.RequestedAt.UTC()}, CompletedAt: stamp(j.CompletedAt),
		Receipts: make([]privacyapi.Receipt, 0, len(privacyapi.Contexts))}
	for _, c := range privacyapi.Contexts {
		r := privacyapi.Receipt{Context: c, Status: privacyapi.StatusPending, Erased: map[string]int64{},
			Redacted: map[string]int64{}, Kept: []privacyapi.Kept{}}
		if raw, ok := j.Parts[c]; ok {
			var part privacyapi.ErasePart
			if err := json.Unmarshal(raw, &part); err != nil {
				return e, fmt.Errorf("erasure %d part of %s: %w", j.ID, c, err)
			}
			r = part.Receipt
			r.Context, r.Status = c, privacyapi.StatusCompleted
			if r.Erased == nil {
				r.Erased = map[string]int64{}
			}
			if r.Redacted == nil {
				r.Redacted = map[string]int64{}
			}
			if r.Kept == nil {
				r.Kept = []privacyapi.Kept{}
			}
		}
		e.Receipts = append(e.Receipts, r)
	}
	return e, nil
}

// Kick wakes the runner now (a request was just stored).
func (p *Privacy) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// purgeEvery is how often the runner deletes the exports past their
// retention.
const purgeEvery = time.Hour

// PurgeExports deletes the exports completed more than ExportRetention
// ago.
func (p *Privacy) PurgeExports(ctx context.Context) (int64, error) {
	return p.store.PurgeExports(ctx, p.cfg.ExportRetention)
}

// Run works the due requests until ctx ends: when kicked, and every Poll;
// every hour it deletes the exports past their retention. Every replica
// may run it: a request is worked by one claim at a time.
func (p *Privacy) Run(ctx context.Context) {
	t := time.NewTicker(p.cfg.Poll)
	defer t.Stop()
	failing := false
	var purged time.Time
	for {
		if time.Since(purged) >= purgeEvery {
			n, err := p.PurgeExports(ctx)
			switch {
			case err != nil && ctx.Err() == nil:
				p.log.Warn("privacy exports: purge failed", "error", err.Error())
			case n > 0:
				p.log.Info("privacy exports past their retention deleted", "count", n)
			}
			purged = time.Now()
		}
		for {
			n, err := p.RunOnce(ctx)
			if err != nil && ctx.Err() == nil && !failing {
				p.log.Warn("privacy requests: claim failed", "error", err.Error())
			}
			failing = err != nil
			if err != nil || n == 0 {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.kick:
		}
	}
}

// RunOnce claims the due requests and works each as far as it goes now,
// all at once (a context that hangs delays its requests only, and none
// waits past its lease behind the others); it answers how many it
// claimed.
func (p *Privacy) RunOnce(ctx context.Context) (int, error) {
	jobs, err := p.store.ClaimPrivacy(ctx, p.cfg.Lease, p.cfg.Batch)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.work(ctx, j); err != nil && ctx.Err() == nil {
				p.log.Warn("privacy request failed; retried later", "kind", j.Kind, "id", j.ID, "error", err.Error())
			}
		}()
	}
	wg.Wait()
	return len(jobs), nil
}

// backoff is the delay after attempts failed attempts.
func (p *Privacy) backoff(attempts int) time.Duration {
	d := p.cfg.RetryBase
	for range min(attempts, 30) {
		d *= 2
		if d >= p.cfg.RetryMax {
			return p.cfg.RetryMax
		}
	}
	return min(d, p.cfg.RetryMax)
}

// work runs j's phases from the first not fully answered: each phase's
// contexts are asked at once, each answer stored as it arrives; a phase
// with a context that failed ends the attempt (the request is due again
// after the backoff, and only the contexts still unanswered are asked).
func (p *Privacy) work(ctx context.Context, j PrivacyJob) error {
	ctx = history.WithActor(ctx, j.Actor)
	if j.Kind == KindErasure {
		ctx = history.WithVia(ctx, historyapi.ViaErasure)
	}
	if j.Parts == nil {
		j.Parts = map[string]json.RawMessage{}
	}
	for j.Phase < len(privacyapi.Phases) {
		s, err := subject(j)
		if err != nil {
			return err
		}
		var todo []string
		for _, c := range privacyapi.Phases[j.Phase] {
			if _, done := j.Parts[c]; !done {
				todo = append(todo, c)
			}
		}
		var mu sync.Mutex
		var failed []error
		answered := map[string]json.RawMessage{}
		var wg sync.WaitGroup
		for _, c := range todo {
			wg.Add(1)
			go func() {
				defer wg.Done()
				raw, err := p.ask(ctx, j.Kind, j.ID, c, s)
				if err == nil {
					// An answer given is saved even while shutting down:
					// a save cut off by the cancel could still commit on
					// the server after the request was left due, and
					// lease it again.
					err = p.store.SavePrivacyPart(context.WithoutCancel(ctx), j.Kind, j.ID, c, raw, p.cfg.Lease)
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = append(failed, fmt.Errorf("%s: %w", c, err))
					return
				}
				answered[c] = raw
			}()
		}
		wg.Wait()
		maps.Copy(j.Parts, answered)
		if err := errors.Join(failed...); err != nil {
			if slices.ContainsFunc(failed, func(e error) bool { return errors.Is(e, ErrPrivacyGone) }) {
				return nil
			}
			delay := p.backoff(j.Attempts)
			if ctx.Err() != nil {
				// Shutting down: the request is left due at once, for
				// another replica or the next start, not after the lease.
				delay = 0
			}
			if derr := p.store.DelayPrivacy(context.WithoutCancel(ctx), j.Kind, j.ID, delay, err.Error()); derr != nil {
				return errors.Join(err, derr)
			}
			return err
		}
		j.Phase++
		j.Attempts = 0
		if err := p.store.AdvancePrivacy(ctx, j.Kind, j.ID, j.Phase, p.cfg.Lease); err != nil {
			if errors.Is(err, ErrPrivacyGone) {
				return nil
			}
			return err
		}
	}
	err := p.complete(ctx, j)
	if errors.Is(err, ErrPrivacyGone) {
		return nil
	}
	return err
}

// ask calls context c for its part of request id.
func (p *Privacy) ask(ctx context.Context, kind string, id int64, c string, s privacyapi.Subject) (json.RawMessage, error) {
	var part any
	var err error
	if kind == KindErasure {
		part, err = p.parts[c].Erase(ctx, id, s)
	} else {
		var ep privacyapi.ExportPart
		ep, err = p.parts[c].Export(ctx, s)
		if len(ep.Data) == 0 || string(ep.Data) == "null" {
			ep.Data = json.RawMessage(`{}`)
		}
		part = ep
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(part)
}

// subject is what j's current phase asks about: the address and the ids
// the earlier phases found, sorted and without repeats, so a phase asked
// again sends the same subject (a context runs an erasure once per id
// and subject).
func subject(j PrivacyJob) (privacyapi.Subject, error) {
	var f privacyapi.Found
	for _, phase := range privacyapi.Phases[:j.Phase] {
		for _, c := range phase {
			var part struct{ privacyapi.Found }
			if err := json.Unmarshal(j.Parts[c], &part); err != nil {
				return privacyapi.Subject{}, fmt.Errorf("%s's part: %w", c, err)
			}
			f = f.Merge(part.Found)
		}
	}
	ids := func(s []int64) []int64 {
		slices.Sort(s)
		return slices.Compact(s)
	}
	return privacyapi.Subject{Email: j.Email, ContactIDs: ids(f.ContactIDs), LeadIDs: ids(f.LeadIDs),
		DealIDs: ids(f.DealIDs)}, nil
}

// complete ends j once every phase answered.
func (p *Privacy) complete(ctx context.Context, j PrivacyJob) error {
	if j.Kind == KindExport {
		doc := privacyapi.Document{Email: j.Email, GeneratedAt: timestamp.Time{Time: time.Now().UTC()},
			Contexts: map[string]json.RawMessage{}}
		for _, c := range privacyapi.Contexts {
			var part privacyapi.ExportPart
			if err := json.Unmarshal(j.Parts[c], &part); err != nil {
				return fmt.Errorf("%s's part: %w", c, err)
			}
			doc.Contexts[c] = part.Data
		}
		return p.store.CompleteExport(ctx, j.ID, doc)
	}
	ev := ErasedEvent{ErasureID: j.ID, Counts: map[string]ReceiptCounts{}}
	for _, c := range privacyapi.Contexts {
		var part privacyapi.ErasePart
		if err := json.Unmarshal(j.Parts[c], &part); err != nil {
			return fmt.Errorf("%s's part: %w", c, err)
		}
		rc := ReceiptCounts{Erased: part.Receipt.Erased, Redacted: part.Receipt.Redacted, Kept: len(part.Receipt.Kept)}
		if rc.Erased == nil {
			rc.Erased = map[string]int64{}
		}
		if rc.Redacted == nil {
			rc.Redacted = map[string]int64{}
		}
		ev.Counts[c] = rc
	}
	if err := p.store.CompleteErasure(ctx, j.ID, ev); err != nil {
		return err
	}
	p.log.Info("person erased", "erasure_id", j.ID)
	return nil
}
