// Package expiry runs the daily contract expiry and renewal as an asynq
// task. Every replica runs a scheduler and a one-worker server on the same
// queue; the work is still done once per day:
//
//   - the scheduler's daily tick and the start-up enqueue both only
//     enqueue the day's task with asynq.TaskID("<queue>:<YYYY-MM-DD>") and a
//     retention of two days, so replicas racing to enqueue it conflict and
//     the day's task exists (and runs) once;
//   - the task itself claims due contracts with FOR UPDATE SKIP LOCKED and
//     changes them in the transaction of their notes, so even two runs at
//     once (a manual re-run, a retry) never expire or renew a contract twice;
//   - a due contract whose row stays locked longer than the store's final
//     pass waits makes the run fail with contracts.ErrDueLocked, and asynq
//     retries the day's task (after 1, 2, 3… × LockedRetryDelay, at most
//     MaxRetry times; a contract still locked then is caught up the next
//     day, with the same dates).
//
// A run's changes are recorded in the record history as the system's
// (actor {type: system}) via expiry.
package expiry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/tracing"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// TaskType is the asynq type of the expiry task.
const TaskType = "contracts:expire"

// Runner does one expiry run (contracts.Service).
type Runner interface {
	RunExpiry(ctx context.Context, today time.Time) (contracts.ExpiryResult, error)
}

// Config configures the job; the process reads it with config.Parse.
type Config struct {
	// Queue is the asynq queue; tests use a unique one.
	Queue string `env:"CONTRACTS_QUEUE" envDefault:"contracts"`
	// Cron is the daily schedule in UTC.
	Cron string `env:"CONTRACTS_EXPIRY_CRON" envDefault:"5 0 * * *"`
	// RunOnStart enqueues today's run at start-up.
	RunOnStart bool `env:"CONTRACTS_EXPIRY_ON_START" envDefault:"true"`
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// LockedRetryDelay is the first retry delay of a run that left due
	// contracts locked (contracts.ErrDueLocked); retry n waits n+1 times
	// as long. One minute when zero; tests shorten it.
	LockedRetryDelay time.Duration
}

// Job wires the scheduler, the worker and the runner.
type Job struct {
	rdb    redis.UniversalClient
	cfg    Config
	run    Runner
	client *asynq.Client
	log    *slog.Logger
}

// New checks the configuration.
func New(rdb redis.UniversalClient, cfg Config, run Runner, log *slog.Logger) (*Job, error) {
	if rdb == nil || run == nil || log == nil {
		return nil, errors.New("expiry: redis, runner and logger are required")
	}
	if cfg.Queue == "" || cfg.Cron == "" {
		return nil, errors.New("expiry: queue and cron are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.LockedRetryDelay <= 0 {
		cfg.LockedRetryDelay = time.Minute
	}
	return &Job{rdb: rdb, cfg: cfg, run: run, client: asynq.NewClientFromRedisClient(rdb), log: log}, nil
}

type payload struct {
	// Day is the UTC day to process; empty marks the scheduler's tick.
	Day string `json:"day,omitempty"`
}

// EnqueueDay enqueues the run of day once: a second enqueue of the same
// day (another replica, a restart) is a no-op while the task or its
// two-day retention exists.
func (j *Job) EnqueueDay(ctx context.Context, day time.Time) error {
	d := contracts.FormatDate(contracts.Day(day))
	b, err := json.Marshal(payload{Day: d})
	if err != nil {
		return err
	}
	_, err = tracing.Enqueue(ctx, j.client, asynq.NewTask(TaskType, b),
		asynq.Queue(j.cfg.Queue), asynq.TaskID(j.cfg.Queue+":"+d),
		asynq.Retention(48*time.Hour), asynq.MaxRetry(5), asynq.Timeout(30*time.Minute))
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil
	}
	return err
}

// Handle processes one task: a tick enqueues today's run, a dated task
// runs it.
func (j *Job) Handle(ctx context.Context, t *asynq.Task) error {
	var p payload
	if len(t.Payload()) > 0 {
		if err := json.Unmarshal(t.Payload(), &p); err != nil {
			return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
		}
	}
	if p.Day == "" {
		return j.EnqueueDay(ctx, j.cfg.Now())
	}
	day, err := contracts.ParseDate(p.Day)
	if err != nil {
		return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
	}
	// The run's changes (a status, a termination date, the system notes)
	// are the system's, made by the expiry, in the record history.
	ctx = history.WithVia(history.WithActor(ctx, historyapi.HistoryActor{Type: historyapi.ActorSystem}), historyapi.ViaExpiry)
	res, err := j.run.RunExpiry(ctx, day)
	if errors.Is(err, contracts.ErrDueLocked) {
		// The rest is done; asynq retries the day for the locked rows.
		j.log.WarnContext(ctx, "contract expiry run left locked contracts for a retry", "day", p.Day,
			"expired", res.Expired, "renewed", res.Renewed, "error", err.Error())
		return err
	}
	if err != nil {
		return err
	}
	j.log.InfoContext(ctx, "contract expiry run", "day", p.Day, "expired", res.Expired, "renewed", res.Renewed)
	return nil
}

// retryDelay retries a run that found due contracts locked soon (they are
// usually held for moments, by a user's PUT), and anything else with
// asynq's default backoff.
func (j *Job) retryDelay(n int, err error, t *asynq.Task) time.Duration {
	if errors.Is(err, contracts.ErrDueLocked) {
		return time.Duration(n+1) * j.cfg.LockedRetryDelay
	}
	return asynq.DefaultRetryDelayFunc(n, err, t)
}

// Run serves the queue and the schedule until ctx ends.
func (j *Job) Run(ctx context.Context) error {
	srv := asynq.NewServerFromRedisClient(j.rdb, asynq.Config{
		Concurrency:    1,
		Queues:         map[string]int{j.cfg.Queue: 1},
		Logger:         logAdapter{j.log},
		LogLevel:       asynq.WarnLevel,
		BaseContext:    func() context.Context { return context.WithoutCancel(ctx) },
		RetryDelayFunc: j.retryDelay,
	})
	mux := asynq.NewServeMux()
	mux.Use(tracing.Middleware)
	mux.HandleFunc(TaskType, j.Handle)
	if err := srv.Start(mux); err != nil {
		return fmt.Errorf("expiry: start worker: %w", err)
	}
	defer srv.Shutdown()

	sched := asynq.NewSchedulerFromRedisClient(j.rdb, &asynq.SchedulerOpts{
		Location: time.UTC, Logger: logAdapter{j.log}, LogLevel: asynq.WarnLevel,
	})
	tick, _ := json.Marshal(payload{})
	// Unique for an hour: replicas firing the same minute enqueue one tick.
	if _, err := sched.Register(j.cfg.Cron, asynq.NewTask(TaskType, tick),
		asynq.Queue(j.cfg.Queue), asynq.Unique(time.Hour)); err != nil {
		return fmt.Errorf("expiry: schedule %q: %w", j.cfg.Cron, err)
	}
	if err := sched.Start(); err != nil {
		return fmt.Errorf("expiry: start scheduler: %w", err)
	}
	defer sched.Shutdown()

	if j.cfg.RunOnStart {
		if err := j.EnqueueDay(ctx, j.cfg.Now()); err != nil {
			// Redis may come later; the schedule still runs.
			j.log.WarnContext(ctx, "expiry: start-up run not enqueued", "error", err.Error())
		}
	}
	<-ctx.Done()
	return nil
}

// logAdapter sends asynq's logs to slog.
type logAdapter struct{ l *slog.Logger }

func (a logAdapter) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...), "component", "asynq") }
func (a logAdapter) Info(args ...any)  { a.l.Info(fmt.Sprint(args...), "component", "asynq") }
func (a logAdapter) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...), "component", "asynq") }
func (a logAdapter) Error(args ...any) {
	msg := fmt.Sprint(args...)
	// asynq reports that it may not close a connection it was given; that
	// is by design (the pool is closed by main), not an error.
	if strings.Contains(msg, "connection is shared") {
		a.l.Debug(msg, "component", "asynq")
		return
	}
	a.l.Error(msg, "component", "asynq")
}
func (a logAdapter) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...), "component", "asynq") }
