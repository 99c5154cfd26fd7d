package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/netguard"
	"github.com/opencrm/crm/pkg/tracing"
	"github.com/opencrm/crm/services/webhooks/internal/store"
)

// TaskType is the asynq task of one batch: a subscription's deliveries
// sent one after the other over one connection.
const TaskType = "webhook:deliver-batch"

// payload names the batch; its deliveries are listed in the batches table
// (tasks of earlier versions also carry ids and attempts, ignored).
type payload struct {
	Batch        int64 `json:"batch"`
	Subscription int64 `json:"subscription"`
}

// TaskID is the asynq task id of a batch: enqueueing it again (the sweeper)
// adds nothing while it is pending, running or waiting to run again.
func TaskID(batch int64) string { return "dlvb:" + strconv.FormatInt(batch, 10) }

// Engine is one process's dispatcher, sweeper and workers.
type Engine struct {
	store   *store.Store
	cfg     Config
	redis   RedisConn
	queue   *asynq.Client
	inspect *asynq.Inspector
	client  *http.Client
	secrets Opener
	metrics *Metrics
	log     *slog.Logger
	wake    chan struct{}
	// stopping is closed when the workers are told to stop: a batch under
	// way makes no further attempt.
	stopping chan struct{}
}

// RedisConn makes the asynq server's own Redis client (asynq closes it on
// shutdown, so it must not be the shared one).
type RedisConn = asynq.RedisConnOpt

// OwnRedis is a RedisConn opening a client of its own with opt (REDIS_URL's
// options), for the worker server to close.
func OwnRedis(opt *redis.Options) RedisConn { return ownRedis{opt} }

type ownRedis struct{ opt *redis.Options }

func (c ownRedis) MakeRedisClient() any { return redis.NewClient(c.opt) }

// New wires an engine. rdb (shared, closed by the caller) enqueues; conn
// is for the worker server.
func New(st *store.Store, rdb redis.UniversalClient, conn RedisConn, secrets Opener, m *Metrics, cfg Config, log *slog.Logger) (*Engine, error) {
	if st == nil || rdb == nil || conn == nil || secrets == nil || m == nil || log == nil {
		return nil, errors.New("delivery: every dependency is required")
	}
	cfg.defaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	client := netguard.NewClient(netguard.ClientOptions{
		Timeout: cfg.Timeout, AllowPrivate: cfg.AllowPrivate, Resolver: cfg.Resolver, Exempt: cfg.Exempt,
	})
	if tr, ok := client.Transport.(*http.Transport); ok {
		// Every worker may be sending a batch to the same host (several
		// subscriptions of one receiver): each keeps its connection
		// between requests instead of dialling anew.
		tr.MaxIdleConnsPerHost = max(tr.MaxIdleConnsPerHost, cfg.Workers)
		tr.MaxIdleConns = max(tr.MaxIdleConns, cfg.Workers)
	}
	return &Engine{
		store: st, cfg: cfg, redis: conn, queue: asynq.NewClientFromRedisClient(rdb),
		inspect: asynq.NewInspectorFromRedisClient(rdb),
		client:  client,
		secrets: secrets, metrics: m, log: log, wake: make(chan struct{}, 1),
		stopping: make(chan struct{}),
	}, nil
}

// Wake makes the dispatcher look for due deliveries now (after an ingest
// or an outcome), instead of at its next tick.
func (e *Engine) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// RunDispatcher hands due deliveries to the workers until ctx ends.
func (e *Engine) RunDispatcher(ctx context.Context) {
	t := time.NewTicker(e.cfg.Tick)
	defer t.Stop()
	for ctx.Err() == nil {
		n, err := e.DispatchOnce(ctx)
		if err != nil && ctx.Err() == nil {
			e.log.Warn("webhook dispatch failed", "error", err.Error())
		}
		if err == nil && n > 0 {
			continue // more slots may be free
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-e.wake:
		}
	}
}

// DispatchOnce hands out one round of batches (one per free slot of each
// subscription) and returns how many deliveries they hold.
func (e *Engine) DispatchOnce(ctx context.Context) (int, error) {
	batches, err := e.store.Dispatch(ctx, e.cfg.PerEndpoint, e.cfg.Batch)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, b := range batches {
		n += len(b.Tasks)
	}
	for i, b := range batches {
		if err := e.enqueue(ctx, b); err != nil {
			// Back to the dispatcher; if this fails too, the sweeper
			// finds them.
			for _, b := range batches[i:] {
				_ = e.store.Release(context.WithoutCancel(ctx), b.ID)
			}
			return n, err
		}
	}
	return n, nil
}

// enqueue hands one batch to the workers. The task id makes it idempotent:
// while that batch's task is pending, running or waiting to run again,
// nothing is added. A task asynq gave up on (archived after its retries,
// e.g. through a long database outage) would block the id for good, so it
// is deleted and the batch enqueued afresh.
func (e *Engine) enqueue(ctx context.Context, b store.Batch) error {
	id := TaskID(b.ID)
	raw, _ := json.Marshal(payload{Batch: b.ID, Subscription: b.SubscriptionID})
	for range 2 {
		_, err := tracing.Enqueue(ctx, e.queue, asynq.NewTask(TaskType, raw),
			asynq.Queue(e.cfg.Queue), asynq.TaskID(id),
			asynq.MaxRetry(10), asynq.Timeout(e.cfg.BatchDeadline+e.cfg.Timeout+30*time.Second))
		if err == nil {
			return nil
		}
		if !errors.Is(err, asynq.ErrTaskIDConflict) {
			return fmt.Errorf("delivery: enqueue batch %d: %w", b.ID, err)
		}
		info, err := e.inspect.GetTaskInfo(e.cfg.Queue, id)
		if err != nil || (info.State != asynq.TaskStateArchived && info.State != asynq.TaskStateCompleted) {
			return nil // that batch's task exists and will run
		}
		if err := e.inspect.DeleteTask(e.cfg.Queue, id); err != nil {
			return fmt.Errorf("delivery: drop dead task %s: %w", id, err)
		}
	}
	return nil
}

// RunSweeper re-enqueues batches queued for longer than StaleAfter
// (a task Redis lost, or a process killed between marking and enqueueing)
// until ctx ends.
func (e *Engine) RunSweeper(ctx context.Context) {
	t := time.NewTicker(e.cfg.StaleAfter / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := e.SweepOnce(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn("webhook sweep failed", "error", err.Error())
		}
	}
}

// SweepOnce re-enqueues the stale batches once.
func (e *Engine) SweepOnce(ctx context.Context) error {
	batches, err := e.store.Stale(ctx, e.cfg.StaleAfter)
	if err != nil {
		return err
	}
	for _, b := range batches {
		if err := e.enqueue(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

// RunWorkers processes delivery tasks until ctx ends, then waits for the
// attempts under way (up to the timeout) before returning.
func (e *Engine) RunWorkers(ctx context.Context) error {
	srv := asynq.NewServer(e.redis, asynq.Config{
		Concurrency:       e.cfg.Workers,
		Queues:            map[string]int{e.cfg.Queue: 1},
		LogLevel:          asynq.ErrorLevel,
		ShutdownTimeout:   e.cfg.ShutdownWait,
		TaskCheckInterval: e.cfg.Poll,
		BaseContext:       func() context.Context { return context.WithoutCancel(ctx) },
		RetryDelayFunc: func(int, error, *asynq.Task) time.Duration {
			return e.cfg.TaskRetryDelay
		},
	})
	mux := asynq.NewServeMux()
	mux.Use(tracing.Middleware)
	mux.HandleFunc(TaskType, e.process)
	if err := srv.Start(mux); err != nil {
		return fmt.Errorf("delivery: start workers: %w", err)
	}
	<-ctx.Done()
	close(e.stopping)
	srv.Shutdown()
	return nil
}

// Ping sends a ping to the subscription now, synchronously, records it in
// its delivery log (never retried) and returns the delivery id.
func (e *Engine) Ping(ctx context.Context, subID int64) (int64, error) {
	b, err := e.store.NewPing(ctx, subID)
	if err != nil {
		return 0, err
	}
	jobs, err := e.store.Jobs(ctx, b.ID)
	if err == nil && len(jobs) != 1 {
		err = fmt.Errorf("delivery: ping batch %d vanished", b.ID)
	}
	if err != nil {
		return 0, err
	}
	o, _, err := e.attempt(ctx, jobs[0])
	if err != nil {
		_ = e.store.Release(context.WithoutCancel(ctx), b.ID)
		return 0, err
	}
	j := jobs[0]
	return j.ID, e.record(context.WithoutCancel(ctx), b.ID, jobs, []store.Result{{Task: store.Task{ID: j.ID, Attempt: j.Attempt}, Tried: true, Outcome: o}})
}
