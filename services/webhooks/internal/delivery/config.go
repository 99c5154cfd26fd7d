// Package delivery sends events to subscriptions: a dispatcher hands due
// deliveries to asynq workers in batches per subscription (at most
// PerEndpoint batches at a time per subscription, one record's deliveries
// in order), a worker POSTs a batch's signed attempts one after the other
// through a client that cannot reach private addresses, and each outcome
// sets the next attempt on a backoff schedule. A sweeper re-enqueues
// batches whose task was lost, so an accepted event is delivered at least
// once whatever dies in between.
package delivery

import (
	"errors"
	"time"

	"github.com/opencrm/crm/pkg/netguard"
)

// DefaultSchedule is the wait after each failed attempt (the last repeats),
// before ±20 % jitter.
var DefaultSchedule = []time.Duration{
	30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour,
	2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// Config tunes the engine; zero fields take the defaults. The tagged
// fields are read from the environment (pkg/config.Parse, which calls
// Validate); the others are the process's to set.
type Config struct {
	// Queue is the asynq queue (tests use their own).
	Queue string `env:"WEBHOOKS_QUEUE" envDefault:"webhooks"`
	// Workers is how many batches one process sends at once.
	Workers int `env:"WEBHOOKS_WORKERS" envDefault:"20" min:"1" max:"1000"`
	// PerEndpoint caps the batches of one subscription in flight (each
	// sends one request at a time), so a slow or dead receiver holds at
	// most that many worker slots and connections.
	PerEndpoint int `env:"WEBHOOKS_PER_ENDPOINT" envDefault:"4" min:"1" max:"100"`
	// Timeout bounds one attempt, answer included.
	Timeout time.Duration `env:"WEBHOOKS_TIMEOUT" envDefault:"10s" min:"0s"`
	// Schedule is the wait after each failed attempt; Jitter its spread
	// (0.2 = ±20 %; negative disables it).
	Schedule []time.Duration
	Jitter   float64
	// MaxAge is how long a delivery is retried before it fails for good.
	MaxAge time.Duration `env:"WEBHOOKS_MAX_AGE" envDefault:"72h" min:"0s"`
	// Tick is how often the dispatcher looks for due deliveries when not
	// woken.
	Tick time.Duration
	// Batch is how many deliveries of one subscription one task sends, one
	// after the other over one connection: a task's round trips (Redis,
	// the job query, the outcome statement) are paid once per batch.
	Batch int `env:"WEBHOOKS_BATCH" envDefault:"100" min:"1" max:"1000"`
	// BatchDeadline is how long a batch keeps starting attempts; the rest
	// are given back, due at once, so a slow receiver does not hold a slot
	// for minutes. A batch thus holds its slot at most BatchDeadline +
	// Timeout, which must stay under StaleAfter (default: 2 × Timeout, or
	// less when StaleAfter is short).
	BatchDeadline time.Duration
	// Poll is how often a worker server looks for tasks while its queue is
	// empty. The dispatcher keeps only a few tasks per subscription in the
	// queue, so it is often empty for an instant: asynq's default (1 s)
	// capped throughput at a few hundred deliveries a second.
	Poll time.Duration
	// StaleAfter is how long a batch may stay queued before its task is
	// considered lost and enqueued again.
	StaleAfter time.Duration `env:"WEBHOOKS_STALE_AFTER" envDefault:"2m" min:"0s"`
	// AllowPrivate lets deliveries reach private addresses (development;
	// the negation of WEBHOOKS_BLOCK_PRIVATE, which subscription URLs obey
	// too).
	AllowPrivate bool
	// Exempt are prefixes deliveries may reach although private
	// (WEBHOOKS_ALLOWED_CIDRS: an operator's own internal receivers).
	Exempt netguard.Exempt
	// Resolver resolves receiver hosts at dial time (tests replace it).
	Resolver netguard.Resolver
	// TaskRetryDelay is how long asynq waits before running again a task
	// whose worker stopped mid-way.
	TaskRetryDelay time.Duration
	// ShutdownWait is how long stopping waits for attempts under way
	// (default Timeout + 1 s); one cut short is recorded nowhere and runs
	// again.
	ShutdownWait time.Duration
}

func (c *Config) defaults() {
	if c.Queue == "" {
		c.Queue = "webhooks"
	}
	if c.Workers <= 0 {
		c.Workers = 20
	}
	if c.PerEndpoint <= 0 {
		c.PerEndpoint = 4
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if len(c.Schedule) == 0 {
		c.Schedule = DefaultSchedule
	}
	if c.Jitter == 0 {
		c.Jitter = 0.2
	}
	if c.MaxAge <= 0 {
		c.MaxAge = 72 * time.Hour
	}
	if c.Tick <= 0 {
		c.Tick = 200 * time.Millisecond
	}
	if c.Poll <= 0 {
		c.Poll = 25 * time.Millisecond
	}
	if c.Batch <= 0 {
		c.Batch = 100
	}
	if c.StaleAfter <= 0 {
		c.StaleAfter = 2 * time.Minute
	}
	if c.BatchDeadline <= 0 {
		c.BatchDeadline = max(min(2*c.Timeout, (c.StaleAfter-c.Timeout)/2), time.Millisecond)
	}
	if c.ShutdownWait <= 0 {
		c.ShutdownWait = c.Timeout + time.Second
	}
	if c.TaskRetryDelay <= 0 {
		c.TaskRetryDelay = 5 * time.Second
	}
}

// Validate checks the settings read from the environment, naming their
// variables: an attempt is bounded by a minute, and a batch is not taken
// for lost while its attempt may still be under way.
func (c *Config) Validate() error {
	var errs []error
	if c.Timeout <= 0 || c.Timeout > time.Minute {
		errs = append(errs, errors.New("WEBHOOKS_TIMEOUT: must be between 1ms and 1m"))
	}
	if c.StaleAfter <= c.Timeout {
		errs = append(errs, errors.New("WEBHOOKS_STALE_AFTER: must be longer than WEBHOOKS_TIMEOUT"))
	}
	return errors.Join(errs...)
}

func (c *Config) check() error {
	if c.StaleAfter <= c.Timeout {
		return errors.New("delivery: StaleAfter must be longer than Timeout")
	}
	if c.StaleAfter <= c.BatchDeadline+c.Timeout {
		return errors.New("delivery: StaleAfter must be longer than BatchDeadline + Timeout")
	}
	return nil
}
