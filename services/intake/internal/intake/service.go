package intake

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/opencrm/crm/pkg/batch"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/history"
)

// Config tunes forwarding and the retry job. The tagged fields are read
// from the environment over DefaultConfig (cmd/intake).
type Config struct {
	// ForwardTimeout bounds the inline call to leads; past it the answer
	// is 202 and the retry job takes over.
	ForwardTimeout time.Duration `env:"INTAKE_FORWARD_TIMEOUT" min:"0s"`
	// Lease is how long a claimed submission is hidden from other
	// replicas' retry jobs (must exceed ForwardTimeout).
	Lease time.Duration `env:"INTAKE_RETRY_LEASE" min:"0s"`
	// RetryInterval is how often the retry job looks for due submissions.
	RetryInterval time.Duration `env:"INTAKE_RETRY_INTERVAL" min:"0s"`
	// RetryBase and RetryMax bound the exponential backoff.
	RetryBase time.Duration `env:"INTAKE_RETRY_BASE" min:"0s"`
	RetryMax  time.Duration `env:"INTAKE_RETRY_MAX" min:"0s"`
	// MaxAttempts marks a submission failed after this many attempts.
	MaxAttempts int `env:"INTAKE_RETRY_MAX_ATTEMPTS" min:"1" max:"1000000"`
	// Batch is how many submissions one retry pass claims.
	Batch int
	// IdemTTL is how long an Idempotency-Key answer is kept (24 h).
	IdemTTL time.Duration
	// WriteBehind is how many delivered outcomes may wait for RunFinisher;
	// 0 records every outcome before answering.
	WriteBehind int
	// BatchSize caps how many concurrent submissions share one insert
	// transaction and how many leads share one call to leads (50 is also
	// the most leads' batch endpoint takes in one call).
	BatchSize int `env:"INTAKE_BATCH_SIZE" min:"1" max:"50"`
	// Flushers is how many such inserts, and how many such calls, may run
	// at once.
	Flushers int `env:"INTAKE_FLUSHERS" min:"1" max:"64"`
	// ReportDuplicates makes an answer name the contact or lead whose
	// address a submission repeats (duplicate_of). Off by default: an
	// intake key is public (it sits in a web form), and the answer would
	// tell anyone holding it who is a contact, and their record's id.
	// Turn it on where the keys are the installation's own servers'.
	ReportDuplicates bool `env:"INTAKE_REPORT_DUPLICATES"`
}

// Validate holds the rules across the tagged fields, in the words start-up
// has always used.
func (c *Config) Validate() error {
	var errs []error
	if c.Lease <= c.ForwardTimeout {
		errs = append(errs, errors.New("INTAKE_RETRY_LEASE: must be longer than INTAKE_FORWARD_TIMEOUT"))
	}
	if c.RetryInterval <= 0 || c.RetryBase <= 0 {
		errs = append(errs, errors.New("INTAKE_RETRY_INTERVAL: INTAKE_RETRY_INTERVAL and INTAKE_RETRY_BASE must be positive"))
	}
	if c.RetryMax < c.RetryBase {
		errs = append(errs, errors.New("INTAKE_RETRY_MAX: must be at least INTAKE_RETRY_BASE"))
	}
	return errors.Join(errs...)
}

// ReportsDuplicates tells whether answers name the record a submission
// repeats (Config.ReportDuplicates).
func (s *Service) ReportsDuplicates() bool { return s.cfg.ReportDuplicates }

// DefaultConfig is what the service runs with unless configured.
func DefaultConfig() Config {
	return Config{
		ForwardTimeout: 5 * time.Second,
		Lease:          30 * time.Second,
		RetryInterval:  time.Second,
		RetryBase:      2 * time.Second,
		RetryMax:       10 * time.Minute,
		MaxAttempts:    200,
		Batch:          50,
		IdemTTL:        24 * time.Hour,
		WriteBehind:    4096,
		BatchSize:      50,
		Flushers:       1,
	}
}

// Metrics counts what happens to submissions.
type Metrics struct {
	submissions *prometheus.CounterVec
	honeypot    prometheus.Counter
	deliveries  *prometheus.CounterVec
}

// NewMetrics registers the intake instruments on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		submissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "intake_submissions_total",
			Help: "Accepted public submissions by first answer: created, queued, spam, failed.",
		}, []string{"outcome"}),
		honeypot: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "intake_honeypot_submissions_total",
			Help: "Submissions that filled the honeypot field; answered as a success, never forwarded.",
		}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "intake_deliveries_total",
			Help: "Calls to leads by the inline path or the retry job, by result.",
		}, []string{"path", "result"}),
	}
	for _, c := range []prometheus.Collector{m.submissions, m.honeypot, m.deliveries} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Service holds the intake use cases.
type Service struct {
	store   Store
	leads   Leads
	cfg     Config
	metrics *Metrics
	log     *slog.Logger
	// behind holds delivered outcomes that RunFinisher records after the
	// answer went out.
	behind chan Outcome
	// accepts and forwards group concurrent requests' inserts and calls
	// to leads (see pkg/batch): at load, one commit and one call serve
	// many submissions; alone, a request goes straight through.
	accepts  *batch.Batcher[NewSubmission, Submission]
	forwards *batch.Batcher[delivery, leadsapi.CreatedLead]
}

// delivery is a submission's lead on its way to leads and who creates it.
type delivery struct {
	lead  leadsapi.NewLead
	actor historyapi.HistoryActor
}

func deliveryOf(sub Submission) delivery {
	return delivery{lead: leadsapi.NewLead{Key: IdemKeyFor(sub.ID), Lead: LeadOf(sub)}, actor: Actor(sub)}
}

// NewService wires the use cases; every dependency is required.
func NewService(store Store, leads Leads, cfg Config, m *Metrics, log *slog.Logger) (*Service, error) {
	if store == nil || leads == nil || m == nil || log == nil {
		return nil, errors.New("intake: service needs a store, a leads client, metrics and a logger")
	}
	if cfg.Lease <= cfg.ForwardTimeout || cfg.RetryBase <= 0 || cfg.RetryMax < cfg.RetryBase ||
		cfg.MaxAttempts < 1 || cfg.Batch < 1 || cfg.RetryInterval <= 0 || cfg.IdemTTL <= 0 ||
		cfg.BatchSize < 1 || cfg.Flushers < 1 {
		return nil, fmt.Errorf("intake: invalid config %+v", cfg)
	}
	s := &Service{store: store, leads: leads, cfg: cfg, metrics: m, log: log,
		behind: make(chan Outcome, max(cfg.WriteBehind, 0))}
	var err error
	if s.accepts, err = batch.New(store.AcceptMany, cfg.BatchSize, cfg.Flushers, acceptTimeout); err != nil {
		return nil, err
	}
	if s.forwards, err = batch.New(s.deliver, cfg.BatchSize, cfg.Flushers, cfg.ForwardTimeout); err != nil {
		return nil, err
	}
	return s, nil
}

// acceptTimeout bounds one insert of a batch of submissions.
const acceptTimeout = 10 * time.Second

// receiptFor is what a submission's state tells its submitter: a spam
// submission looks created (its own id as the lead's), a delivered one is
// its lead, anything else is queued.
func receiptFor(s Submission) Receipt {
	switch {
	case s.Status == StatusSpam:
		return Receipt{LeadID: s.ID}
	case s.Status == StatusDelivered && s.LeadID != nil:
		return Receipt{LeadID: *s.LeadID}
	default:
		return Receipt{QueuedID: s.ID}
	}
}

// IdemHash fingerprints a request body for Idempotency-Key comparison.
func IdemHash(in Input) []byte {
	raw, _ := json.Marshal(in)
	sum := sha256.Sum256(raw)
	return sum[:]
}

// Submit stores a valid submission, forwards it to leads and returns what
// the submitter is told. idemKey may be empty. in must be normalised and
// valid.
func (s *Service) Submit(ctx context.Context, key Key, in Input, origin, idemKey string) (Receipt, error) {
	var idem *Idem
	if idemKey != "" {
		idem = &Idem{APIKeyID: key.ID, Key: idemKey, Hash: IdemHash(in)}
	}
	status := StatusPending
	if IsSpam(in) {
		status = StatusSpam
	}
	n := NewSubmission{APIKeyID: key.ID, APIKeyName: key.Name, Status: status, Input: in, Origin: origin, Lease: s.cfg.Lease}
	var acc Accepted
	var err error
	if idem == nil {
		// Stored by a shared commit; should the client leave meanwhile, the
		// submission is still delivered by the retry job.
		acc.Submission, err = s.accepts.Do(ctx, n)
	} else {
		acc, err = s.store.Accept(ctx, n, idem)
	}
	if err != nil {
		return Receipt{}, err
	}
	if acc.Replay != nil {
		return *acc.Replay, nil
	}
	if acc.Orphan != nil {
		r := receiptFor(*acc.Orphan)
		if err := s.store.CompleteIdem(ctx, *idem, r); err != nil {
			return Receipt{}, err
		}
		r.Replayed = true
		return r, nil
	}
	sub := acc.Submission
	// From here the submission is durable: finish the attempt even if the
	// client goes away, so the log and the idempotency record stay true.
	ctx = context.WithoutCancel(ctx)
	if status == StatusSpam {
		s.metrics.honeypot.Inc()
		s.metrics.submissions.WithLabelValues("spam").Inc()
		r := receiptFor(sub)
		if idem != nil {
			if err := s.store.Finish(ctx, Outcome{ID: sub.ID, Status: StatusSpam, Idem: idem, Receipt: &r}); err != nil {
				return Receipt{}, err
			}
		}
		return r, nil
	}
	out, r := s.attempt(ctx, sub, "inline")
	if idem == nil && out.Status == StatusDelivered && s.finishLater(out) {
		s.metrics.submissions.WithLabelValues("created").Inc()
		return r, nil
	}
	out.Idem, out.Receipt = idem, &r
	if err := s.store.Finish(ctx, out); err != nil {
		// The submission is stored and will be delivered by the retry job;
		// the client still learns that it was accepted.
		s.log.ErrorContext(ctx, "record delivery outcome", "submission_id", sub.ID, "error", err.Error())
		if r.Refusal != nil {
			return Receipt{}, err
		}
		return Receipt{QueuedID: sub.ID}, nil
	}
	s.metrics.submissions.WithLabelValues(r.Outcome()).Inc()
	return r, nil
}

// finishLater queues a delivered outcome for RunFinisher; false when the
// queue is full (the caller records it itself). Recording a delivery late
// is safe: until it is recorded the submission is pending under its lease,
// and should the record be lost, the retry job delivers it again under the
// same leads Idempotency-Key, which returns the same lead. Outcomes that
// an Idempotency-Key answer or the retry schedule depend on are never
// written behind.
func (s *Service) finishLater(out Outcome) bool {
	select {
	case s.behind <- out:
		return true
	default:
		return false
	}
}

// RunFinisher records queued outcomes in batches (one round trip each)
// until ctx ends, then records what is still queued. Run it once per
// process, and stop it only after the HTTP server has drained.
func (s *Service) RunFinisher(ctx context.Context) {
	const maxBatch = 256
	for {
		var first Outcome
		select {
		case <-ctx.Done():
			for {
				batch := s.collect(maxBatch)
				if len(batch) == 0 {
					return
				}
				s.flush(batch)
			}
		case first = <-s.behind:
		}
		s.flush(append([]Outcome{first}, s.collect(maxBatch-1)...))
	}
}

func (s *Service) collect(n int) []Outcome {
	var batch []Outcome
	for len(batch) < n {
		select {
		case o := <-s.behind:
			batch = append(batch, o)
		default:
			return batch
		}
	}
	return batch
}

func (s *Service) flush(batch []Outcome) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.store.FinishMany(ctx, batch); err != nil {
		// Not lost: these submissions are redelivered idempotently when
		// their lease ends.
		s.log.ErrorContext(ctx, "record delivered submissions", "count", len(batch), "error", err.Error())
	}
}

// attempt calls leads once (in a batch shared with concurrent requests)
// and returns the submission's next state and its receipt.
func (s *Service) attempt(ctx context.Context, sub Submission, path string) (Outcome, Receipt) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ForwardTimeout)
	defer cancel()
	res, err := s.forwards.Do(ctx, deliveryOf(sub))
	if err == nil {
		err = res.Err
	}
	return s.outcome(ctx, sub, path, res.ID, err)
}

// deliver creates ds' leads: one call to leads per actor (API key), since
// a call names one actor for all its leads (X-Crm-Actor, which svcclient
// sends from the context), and leads records each lead's creation as that
// key's, via intake. The calls of several keys run at once. The error of
// a call is each of its leads' Err, so deliver itself never fails.
func (s *Service) deliver(ctx context.Context, ds []delivery) ([]leadsapi.CreatedLead, error) {
	type who struct {
		id   int64
		name string
	}
	var order []who
	groups := map[who][]int{}
	for i, d := range ds {
		var k who
		if d.actor.ID != nil {
			k.id = *d.actor.ID
		}
		k.name = d.actor.Name
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	out := make([]leadsapi.CreatedLead, len(ds))
	send := func(idx []int) {
		leads := make([]leadsapi.NewLead, len(idx))
		for j, i := range idx {
			leads[j] = ds[i].lead
		}
		actx := history.WithVia(history.WithActor(ctx, ds[idx[0]].actor), historyapi.ViaIntake)
		res, err := s.leads.CreateLeads(actx, leads)
		if err == nil && len(res) != len(leads) {
			err = fmt.Errorf("intake: leads answered %d of %d leads", len(res), len(leads))
		}
		for j, i := range idx {
			if err != nil {
				out[i].Err = err
			} else {
				out[i] = res[j]
			}
		}
	}
	if len(order) == 1 {
		send(groups[order[0]])
		return out, nil
	}
	var wg sync.WaitGroup
	for _, k := range order {
		wg.Go(func() { send(groups[k]) })
	}
	wg.Wait()
	return out, nil
}

// refusal is leads' refusal of the lead itself (a malformed, invalid or
// conflicting lead: what a provider passes on); retrying would not help.
// nil for anything else (leads down, slow or broken).
func refusal(err error) *fault.Error {
	var f *fault.Error
	if !errors.As(err, &f) {
		return nil
	}
	switch f.Kind {
	case fault.KindMalformed, fault.KindInvalid, fault.KindNotFound, fault.KindConflict:
		return f
	}
	return nil
}

// outcome turns leads' answer for sub (its lead id, or err) into the
// submission's next state and its receipt.
func (s *Service) outcome(ctx context.Context, sub Submission, path string, leadID int64, err error) (Outcome, Receipt) {
	if err == nil {
		s.metrics.deliveries.WithLabelValues(path, "delivered").Inc()
		return Outcome{ID: sub.ID, Status: StatusDelivered, LeadID: &leadID}, Receipt{LeadID: leadID}
	}
	if f := refusal(err); f != nil {
		s.metrics.deliveries.WithLabelValues(path, "refused").Inc()
		s.log.WarnContext(ctx, "leads refused submission", "submission_id", sub.ID, "error", err.Error())
		return Outcome{ID: sub.ID, Status: StatusFailed, LastError: lastError(err)}, Receipt{Refusal: f}
	}
	s.metrics.deliveries.WithLabelValues(path, "unavailable").Inc()
	s.log.WarnContext(ctx, "leads unavailable; submission queued", "submission_id", sub.ID, "error", err.Error())
	attempts := sub.Attempts
	if attempts < 1 {
		attempts = 1
	}
	queued := Receipt{QueuedID: sub.ID}
	if attempts >= s.cfg.MaxAttempts {
		s.log.ErrorContext(ctx, "submission gave up", "submission_id", sub.ID, "attempts", attempts, "error", err.Error())
		return Outcome{ID: sub.ID, Status: StatusFailed, LastError: lastError(err)}, queued
	}
	next := time.Now().Add(s.Backoff(attempts))
	return Outcome{ID: sub.ID, Status: StatusPending, NextAttemptAt: next, LastError: lastError(err)}, queued
}

// IdemKeyFor is the Idempotency-Key of a submission's create call to leads:
// every attempt for one submission carries the same key, so leads creates
// the lead at most once however many times intake retries.
func IdemKeyFor(submissionID int64) string { return "intake-" + strconv.FormatInt(submissionID, 10) }

// Backoff is the delay after the n-th failed attempt: RetryBase doubled per
// attempt, capped at RetryMax, with ±20 % jitter so replicas and
// submissions queued together do not retry in lockstep.
func (s *Service) Backoff(n int) time.Duration {
	d := s.cfg.RetryBase
	for i := 1; i < n && d < s.cfg.RetryMax; i++ {
		d *= 2
	}
	if d > s.cfg.RetryMax {
		d = s.cfg.RetryMax
	}
	jitter := time.Duration((rand.Float64()*0.4 - 0.2) * float64(d))
	return d + jitter
}

// lastError describes a failed delivery for the admin view of the log in
// our own words (the fault's code and detail, as a client of leads would
// see them), never the Go error, which names internal hosts and ports;
// that stays in the service's log. An error without a fault reads as the
// edge renders it: a network failure or timeout as the dependency being
// down, anything else as internal.
func lastError(err error) string {
	var msg string
	var f *fault.Error
	var ne net.Error
	switch {
	case errors.As(err, &f) && f.Kind != fault.KindInternal:
		msg = f.Code
		if f.Detail != "" {
			msg += ": " + f.Detail
		}
		for _, fe := range f.Fields {
			msg += "; " + fe.Field + " " + fe.Message
		}
	case errors.As(err, &ne):
		msg = "upstream_unavailable: a dependency of the service is unavailable; retry later"
	default:
		msg = "internal: an internal error occurred"
	}
	const max = 1000
	if len(msg) > max {
		msg = strings.ToValidUTF8(msg[:max], "")
	}
	return msg
}

// RetryDue runs one pass of the retry job: it claims due submissions and
// sends them to leads, one call per API key (deliver), so each lead is
// created as its key's, as when the key's request delivers it. It returns
// how many it claimed and how many of those it delivered.
func (s *Service) RetryDue(ctx context.Context) (claimed, delivered int, err error) {
	subs, err := s.store.ClaimDue(ctx, s.cfg.Batch, s.cfg.Lease)
	if err != nil || len(subs) == 0 {
		return 0, 0, err
	}
	calls := make([]delivery, len(subs))
	for i, sub := range subs {
		calls[i] = deliveryOf(sub)
	}
	callCtx, cancel := context.WithTimeout(ctx, s.cfg.ForwardTimeout)
	results, _ := s.deliver(callCtx, calls) // a failed call is each of its leads' Err
	cancel()
	outs := make([]Outcome, len(subs))
	for i, sub := range subs {
		r := results[i]
		outs[i], _ = s.outcome(ctx, sub, "retry", r.ID, r.Err)
		if outs[i].Status == StatusDelivered {
			delivered++
			s.log.InfoContext(ctx, "submission delivered by retry", "submission_id", sub.ID, "lead_id", r.ID, "attempts", sub.Attempts)
		}
	}
	if err := s.store.FinishMany(ctx, outs); err != nil {
		return len(subs), delivered, err
	}
	return len(subs), delivered, nil
}

// RunRetries runs the retry job until ctx ends, and purges idempotency
// records past their TTL about once a minute. Every replica runs it; the
// claim query keeps them from delivering one submission twice at once.
func (s *Service) RunRetries(ctx context.Context) {
	t := time.NewTicker(s.cfg.RetryInterval)
	defer t.Stop()
	lastPurge := time.Time{}
	for {
		for {
			n, _, err := s.RetryDue(ctx)
			if err != nil {
				if ctx.Err() == nil {
					s.log.ErrorContext(ctx, "retry pass failed", "error", err.Error())
				}
				break
			}
			// A full batch may mean more are due: go on without waiting.
			if n < s.cfg.Batch {
				break
			}
		}
		if time.Since(lastPurge) > time.Minute {
			lastPurge = time.Now()
			if _, err := s.store.PurgeIdem(ctx, time.Now().Add(-s.cfg.IdemTTL)); err != nil && ctx.Err() == nil {
				s.log.ErrorContext(ctx, "purge idempotency records", "error", err.Error())
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
