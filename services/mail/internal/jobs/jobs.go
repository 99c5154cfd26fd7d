// Package jobs runs mailbox syncs on asynq: a scheduler enqueues a sweep
// every interval, the sweep enqueues one task per mailbox, and workers run
// them. Tasks are unique per mailbox while queued or running, and the
// mailbox lease in the database keeps replicas from syncing one mailbox
// twice even if a duplicate slipped through.
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/tracing"
	"github.com/opencrm/crm/services/mail/internal/mail"
)

// Task types.
const (
	TypeSyncMailbox = "mail:sync_mailbox"
	TypeSyncAll     = "mail:sync_all"
)

// Config names the queue and paces the work.
type Config struct {
	// Queue is the asynq queue name; tests use a random one so they never
	// take each other's tasks.
	Queue string `env:"MAIL_QUEUE" envDefault:"mail"`
	// Interval is how often every mailbox is synced (at least 1s).
	Interval time.Duration `env:"MAIL_SYNC_INTERVAL" envDefault:"5m"`
	// Concurrency is how many mailboxes one process syncs at once.
	Concurrency int `env:"MAIL_SYNC_CONCURRENCY" envDefault:"4" min:"1" max:"64"`
	// TaskTimeout bounds one sync task; keep it at the syncer's lease.
	TaskTimeout time.Duration
}

func (c *Config) defaults() {
	if c.Queue == "" {
		c.Queue = "mail"
	}
	if c.Interval <= 0 {
		c.Interval = 5 * time.Minute
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.TaskTimeout <= 0 {
		c.TaskTimeout = 10 * time.Minute
	}
}

type payload struct {
	MailboxID int64 `json:"mailbox_id"`
}

// Queue enqueues sync tasks; it implements mail.SyncQueue.
type Queue struct {
	client *asynq.Client
	cfg    Config
}

var _ mail.SyncQueue = (*Queue)(nil)

// NewQueue enqueues through rdb (shared; the caller closes it).
func NewQueue(rdb redis.UniversalClient, cfg Config) (*Queue, error) {
	if rdb == nil {
		return nil, errors.New("jobs: redis client is required")
	}
	cfg.defaults()
	return &Queue{client: asynq.NewClientFromRedisClient(rdb), cfg: cfg}, nil
}

// EnqueueSync queues a sync of the mailbox unless one is already queued
// or running.
func (q *Queue) EnqueueSync(ctx context.Context, mailboxID int64) error {
	b, err := json.Marshal(payload{MailboxID: mailboxID})
	if err != nil {
		return err
	}
	_, err = tracing.Enqueue(ctx, q.client, asynq.NewTask(TypeSyncMailbox, b),
		asynq.Queue(q.cfg.Queue), asynq.MaxRetry(2), asynq.Timeout(q.cfg.TaskTimeout),
		asynq.Unique(q.cfg.TaskTimeout))
	if errors.Is(err, asynq.ErrDuplicateTask) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jobs: enqueue sync of mailbox %d: %w", mailboxID, err)
	}
	return nil
}

// Syncer syncs one mailbox.
type Syncer interface {
	Sync(ctx context.Context, mailboxID int64) error
}

// Lister lists the mailboxes to sweep.
type Lister interface {
	MailboxIDs(ctx context.Context) ([]int64, error)
}

// ownedConn makes asynq open (and later close) its own connection pool
// from REDIS_URL: asynq logs an error when asked to shut down on a shared
// client, and go-redis options must not be shared between clients.
type ownedConn struct{ url string }

func (o ownedConn) MakeRedisClient() any {
	opts, err := redis.ParseURL(o.url)
	if err != nil {
		// Checked in NewRunner; unreachable.
		opts = &redis.Options{}
	}
	return redis.NewClient(opts)
}

// Runner is the worker and the scheduler of one process.
type Runner struct {
	conn   ownedConn
	cfg    Config
	queue  *Queue
	syncer Syncer
	lister Lister
	log    *slog.Logger
}

// NewRunner wires a worker that syncs and a scheduler that sweeps.
func NewRunner(redisURL string, cfg Config, queue *Queue, syncer Syncer, lister Lister, log *slog.Logger) (*Runner, error) {
	if _, err := redis.ParseURL(redisURL); err != nil {
		return nil, fmt.Errorf("jobs: redis url: %w", err)
	}
	if queue == nil || syncer == nil || lister == nil || log == nil {
		return nil, errors.New("jobs: every dependency is required")
	}
	cfg.defaults()
	return &Runner{conn: ownedConn{url: redisURL}, cfg: cfg, queue: queue, syncer: syncer, lister: lister, log: log}, nil
}

// Run processes tasks and schedules sweeps until ctx ends.
func (r *Runner) Run(ctx context.Context) error {
	srv := asynq.NewServer(r.conn, asynq.Config{
		Concurrency:     r.cfg.Concurrency,
		Queues:          map[string]int{r.cfg.Queue: 1},
		LogLevel:        asynq.WarnLevel,
		ShutdownTimeout: 20 * time.Second,
		BaseContext:     func() context.Context { return context.WithoutCancel(ctx) },
		RetryDelayFunc: func(n int, _ error, _ *asynq.Task) time.Duration {
			return time.Duration(n+1) * 10 * time.Second
		},
	})
	mux := asynq.NewServeMux()
	mux.Use(tracing.Middleware)
	mux.HandleFunc(TypeSyncMailbox, r.syncMailbox)
	mux.HandleFunc(TypeSyncAll, r.syncAll)
	if err := srv.Start(mux); err != nil {
		return fmt.Errorf("jobs: start worker: %w", err)
	}
	sched := asynq.NewScheduler(r.conn, &asynq.SchedulerOpts{
		LogLevel: asynq.WarnLevel,
		Location: time.UTC,
	})
	// Every replica runs a scheduler; Unique makes their sweeps one per
	// interval.
	if _, err := sched.Register(fmt.Sprintf("@every %s", r.cfg.Interval), asynq.NewTask(TypeSyncAll, nil),
		asynq.Queue(r.cfg.Queue), asynq.MaxRetry(0), asynq.Unique(r.cfg.Interval/2+time.Second)); err != nil {
		srv.Shutdown()
		return fmt.Errorf("jobs: schedule sweep: %w", err)
	}
	if err := sched.Start(); err != nil {
		srv.Shutdown()
		return fmt.Errorf("jobs: start scheduler: %w", err)
	}
	<-ctx.Done()
	sched.Shutdown()
	srv.Shutdown()
	return nil
}

func (r *Runner) syncMailbox(ctx context.Context, t *asynq.Task) error {
	var p payload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.MailboxID <= 0 {
		return fmt.Errorf("%w: bad payload", asynq.SkipRetry)
	}
	return r.syncer.Sync(ctx, p.MailboxID)
}

func (r *Runner) syncAll(ctx context.Context, _ *asynq.Task) error {
	ids, err := r.lister.MailboxIDs(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := r.queue.EnqueueSync(ctx, id); err != nil {
			r.log.WarnContext(ctx, "enqueue mailbox sync", "mailbox_id", id, "error", err.Error())
		}
	}
	return nil
}
