package renderq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/tracing"
)

// Config configures a Client (and the worker's view of the same queues).
// A process reads it with config.Parse, as a field of its configuration;
// a Config written in code gets the same defaults from NewClient.
type Config struct {
	// RedisURL is the Redis of the queues and the stored results.
	RedisURL string `env:"REDIS_URL" envDefault:"redis://localhost:6379/0"`
	// Queues names the queues and prefixes the result keys.
	Queues Queues
	// Wait bounds how long Render waits for the worker.
	Wait time.Duration `env:"RENDER_WAIT" envDefault:"30s" min:"0s"`
	// ResultTTL bounds how long a rendered file is kept. Used by the
	// worker, which writes results.
	ResultTTL time.Duration `env:"RENDER_RESULT_TTL" envDefault:"24h" min:"0s"`
	// MaxRetry bounds the retries of a failing task.
	MaxRetry int `env:"RENDER_MAX_RETRY" envDefault:"3" min:"0" max:"10"`
	// PerUser bounds the renders one user may have in flight at once
	// (DefaultPerUser); beyond it Render returns *BusyError.
	PerUser int `env:"RENDER_USER_INFLIGHT" envDefault:"2" min:"1" max:"100"`
	// Cooldown is how long a render refused for its content
	// (*TooLongError) keeps holding its in-flight slot (DefaultCooldown).
	Cooldown time.Duration `env:"RENDER_REFUSAL_COOLDOWN" envDefault:"10s" min:"0s"`
	// PDFUntagged makes Render ask for untagged PDFs (RENDER_PDF_TAGGED=false;
	// tagged, accessible PDFs are the default). It is the client's setting,
	// not the worker's: it goes into the job and so into the job key. It is
	// the negative so that a Config written in code is accessible too.
	PDFUntagged Untagged `env:"RENDER_PDF_TAGGED"`
	// Lang is the document language of jobs that name none (a BCP 47 tag,
	// DefaultLang). Like tagging it goes into the job and its key.
	Lang string `env:"RENDER_DOCUMENT_LANG" envDefault:"en"`
}

// Untagged is RENDER_PDF_TAGGED read the other way round: "false" is an
// untagged client, so the zero Config (and an unset variable) tags PDFs.
type Untagged bool

// UnmarshalText reads RENDER_PDF_TAGGED's true or false.
func (u *Untagged) UnmarshalText(b []byte) error {
	tagged, err := strconv.ParseBool(string(b))
	if err != nil {
		return fmt.Errorf("must be true or false, got %q", b)
	}
	*u = Untagged(!tagged)
	return nil
}

// Validate checks REDIS_URL and puts RENDER_DOCUMENT_LANG in its
// canonical form (config.Parse calls it).
func (c *Config) Validate() error {
	errs := []error{config.CheckURL("REDIS_URL", c.RedisURL)}
	if lang, err := ParseLang(c.Lang); err != nil {
		errs = append(errs, fmt.Errorf("RENDER_DOCUMENT_LANG: %q is not a BCP 47 language tag (such as en or de-AT)", c.Lang))
	} else {
		c.Lang = lang
	}
	return errors.Join(errs...)
}

// DefaultLang is the document language when neither the job nor
// RENDER_DOCUMENT_LANG names one.
const DefaultLang = "en"

// Settle returns the job that Render submits for job: the settings the
// deployment decides filled in before the key is computed, since everything
// that changes the output is in the job. A language the job names is kept,
// in its canonical form. Its Key is the key of the stored result.
func (c Config) Settle(job Job) Job {
	if job.Format == PDF && !c.PDFUntagged {
		job.Tagged = true
	}
	if job.Lang == "" {
		job.Lang = cmp.Or(c.Lang, DefaultLang)
	}
	if lang, err := ParseLang(job.Lang); err == nil {
		job.Lang = lang
	}
	return job
}

func (c *Config) defaults() {
	if c.Wait <= 0 {
		c.Wait = 30 * time.Second
	}
	if c.ResultTTL <= 0 {
		c.ResultTTL = 24 * time.Hour
	}
	if c.PerUser <= 0 {
		c.PerUser = DefaultPerUser
	}
	if c.Cooldown <= 0 {
		c.Cooldown = DefaultCooldown
	}
}

// Client renders jobs through the worker. It is safe for concurrent use.
type Client struct {
	cfg       Config
	rdb       *redis.Client
	queue     *asynq.Client
	inspector *asynq.Inspector
	store     *Store
}

// NewClient connects to Redis; it does not need a worker to be running.
func NewClient(cfg Config) (*Client, error) {
	cfg.defaults()
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("renderq: REDIS_URL: %w", err)
	}
	rdb := redis.NewClient(opt)
	tracing.Redis(rdb)
	return &Client{
		cfg:       cfg,
		rdb:       rdb,
		queue:     asynq.NewClientFromRedisClient(rdb),
		inspector: asynq.NewInspectorFromRedisClient(rdb),
		store:     NewStore(rdb, cfg.Queues, cfg.ResultTTL),
	}, nil
}

// Close releases the Redis connections.
func (c *Client) Close() error { return c.rdb.Close() }

// Retry-After values of the unavailable answers: a missing worker or browser
// needs a restart (tens of seconds); a timeout usually means a busy queue.
const (
	retryNoWorker = 30 * time.Second
	retryTimeout  = 10 * time.Second
)

// Render returns the rendered file of job for user: the stored one when the
// same job was rendered before, else the worker's result, waiting up to
// Config.Wait. A stored file is served to anyone at once; a render counts
// against the user's in-flight limit (an empty user is not limited).
//
// It returns *BusyError when the user already has Config.PerUser renders in
// flight, *TooLongError when the worker refused the document for its
// content, *UnavailableError when no worker is alive, the renderer is down
// or the wait ends without a result (whichever deadline ends it, and
// whatever Redis answered meanwhile), *FailedError when the worker found the
// job invalid, and the context's error only when ctx was cancelled (the
// caller is gone).
func (c *Client) Render(ctx context.Context, job Job, prio Priority, user string) ([]byte, error) {
	job = c.cfg.Settle(job)
	if err := job.Validate(); err != nil {
		return nil, err
	}
	key := job.Key()
	if data, err := c.finished(ctx, key); err != nil || data != nil {
		return data, c.timedOut(ctx, key, err)
	}
	release, err := c.acquire(ctx, user, c.cfg.Wait+5*time.Second)
	if err != nil {
		return nil, c.timedOut(ctx, key, err)
	}
	var cooldown time.Duration
	defer func() { release(cooldown) }()
	// One deadline for everything from here on: the wait is Config.Wait
	// whatever the step, so a slow Redis cannot stretch it.
	wctx, cancel := context.WithTimeout(ctx, c.cfg.Wait)
	defer cancel()
	data, err := c.submit(wctx, job, key, c.cfg.Queues.Name(prio))
	var tooLong *TooLongError
	if errors.As(err, &tooLong) {
		// A document refused for its content keeps the user's slot a while:
		// a user sending one huge document after another gets 429s instead
		// of keeping the worker busy refusing them.
		cooldown = c.cfg.Cooldown
	}
	// wctx, not ctx: the wait's own deadline ending inside a Redis call
	// (asynq does not wrap context errors) is still a timeout.
	return data, c.timedOut(wctx, key, err)
}

// submit enqueues the job unless it is queued already and waits for it.
func (c *Client) submit(ctx context.Context, job Job, key, queue string) ([]byte, error) {
	servers, err := c.liveServers(queue)
	if err != nil {
		return nil, err
	}
	if len(servers) == 0 {
		return nil, &UnavailableError{Reason: NoWorker, RetryAfter: retryNoWorker, Detail: "no live worker on queue " + queue}
	}
	ps, err := c.store.subscribe(ctx, key)
	if err != nil {
		return nil, err
	}
	defer ps.Close()
	// The job may have finished between the first look and the subscription.
	if data, err := c.store.Result(ctx, key); err != nil || data != nil {
		return data, err
	}
	if err := c.enqueue(ctx, job, key, queue); err != nil {
		return nil, err
	}
	return c.wait(ctx, ps, key, queue)
}

// timedOut turns whatever ended a render without a typed answer into the
// answer the caller owes its client: the context's error when the caller's
// own context was cancelled (nobody is listening), else a 503
// *UnavailableError. A deadline (the wait's or the caller's) that ends
// during a Redis call shows up as that call's error, not as a clean
// ctx.Done(); before this mapping such a timeout surfaced as a 500.
func (c *Client) timedOut(ctx context.Context, key string, err error) error {
	if err == nil {
		return nil
	}
	var (
		unavailable *UnavailableError
		busy        *BusyError
		tooLong     *TooLongError
		failed      *FailedError
	)
	if errors.As(err, &unavailable) || errors.As(err, &busy) || errors.As(err, &tooLong) || errors.As(err, &failed) {
		return err
	}
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ctx.Err()
	}
	reason, retry := RendererDown, retryNoWorker
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		reason, retry = TimedOut, retryTimeout
	}
	return &UnavailableError{Reason: reason, RetryAfter: retry,
		Detail: fmt.Sprintf("job %s: %v", key[:12], err)}
}

// enqueue adds the task unless an identical one is queued or running. A
// finished-and-failed (archived) task with the same id is replaced. The
// task carries the trace context of ctx, so the job's spans join it.
func (c *Client) enqueue(ctx context.Context, job Job, taskID, queue string) error {
	task, err := NewTask(job)
	if err != nil {
		return err
	}
	for range 3 {
		_, err = tracing.Enqueue(ctx, c.queue, task,
			asynq.TaskID(taskID),
			asynq.Queue(queue),
			asynq.MaxRetry(c.cfg.MaxRetry),
			asynq.Timeout(2*c.cfg.Wait),
		)
		if !errors.Is(err, asynq.ErrTaskIDConflict) {
			return err
		}
		info, err := c.inspector.GetTaskInfo(queue, taskID)
		switch {
		case errors.Is(err, asynq.ErrTaskNotFound):
			continue // finished just now; enqueue again, the worker sees the result
		case err != nil:
			return err
		case info.State == asynq.TaskStateArchived || info.State == asynq.TaskStateCompleted:
			if err := c.inspector.DeleteTask(queue, taskID); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) {
				return err
			}
			continue
		default:
			return nil // already queued or running: just wait
		}
	}
	return fmt.Errorf("renderq: could not enqueue task %s", taskID)
}

// orphanGrace is how long a running task may be missing from every live
// worker's list before it counts as orphaned. Workers publish their running
// tasks every 5 s (asynq's heartbeat); waiting longer than two beats rules
// out a task that just started.
const orphanGrace = 11 * time.Second

// wait waits for the worker's announcement, polling as a fallback. While it
// waits it watches for the task being orphaned by a killed worker: asynq
// recovers such a task only after its 30 s lease plus up to a minute, longer
// than a user waits, so the client enqueues a rescue copy under a derived id.
// Both copies write the same key; whichever finishes second finds the stored
// result and does nothing.
func (c *Client) wait(wctx context.Context, ps *redis.PubSub, key, queue string) ([]byte, error) {
	msgs := ps.Channel()
	poll := time.NewTicker(time.Second)
	defer poll.Stop()

	taskID := key
	rescues := 0
	var missingSince time.Time
	for {
		select {
		case <-msgs:
		case <-poll.C:
		case <-wctx.Done():
			return nil, fmt.Errorf("job not rendered within %s: %w", c.cfg.Wait, wctx.Err())
		}
		if data, err := c.finished(wctx, key); err != nil || data != nil {
			return data, err
		}
		orphaned, err := c.orphaned(queue, taskID)
		if err != nil {
			continue // a Redis hiccup; the deadline still bounds the wait
		}
		switch {
		case !orphaned:
			missingSince = time.Time{}
		case missingSince.IsZero():
			missingSince = time.Now()
		case time.Since(missingSince) > orphanGrace:
			rescues++
			job, err := c.taskJob(queue, taskID)
			if err != nil {
				continue
			}
			taskID = fmt.Sprintf("%s-rescue-%d", key, rescues)
			if err := c.enqueue(wctx, job, taskID, queue); err != nil {
				return nil, err
			}
			missingSince = time.Time{}
		}
	}
}

// orphaned reports whether the task is active but no live worker runs it.
func (c *Client) orphaned(queue, taskID string) (bool, error) {
	info, err := c.inspector.GetTaskInfo(queue, taskID)
	if err != nil {
		if errors.Is(err, asynq.ErrTaskNotFound) {
			return false, nil
		}
		return false, err
	}
	if info.State != asynq.TaskStateActive {
		return false, nil
	}
	servers, err := c.liveServers(queue)
	if err != nil {
		return false, err
	}
	for _, s := range servers {
		if slices.ContainsFunc(s.ActiveWorkers, func(w *asynq.WorkerInfo) bool { return w.TaskID == taskID }) {
			return false, nil
		}
	}
	return true, nil
}

// taskJob reads the job back from a queued task.
func (c *Client) taskJob(queue, taskID string) (Job, error) {
	info, err := c.inspector.GetTaskInfo(queue, taskID)
	if err != nil {
		return Job{}, err
	}
	return ParseTask(asynq.NewTask(info.Type, info.Payload))
}

// liveServers lists the running asynq servers that consume queue.
func (c *Client) liveServers(queue string) ([]*asynq.ServerInfo, error) {
	all, err := c.inspector.Servers()
	if err != nil {
		return nil, fmt.Errorf("renderq: list workers: %w", err)
	}
	var live []*asynq.ServerInfo
	for _, s := range all {
		if _, ok := s.Queues[queue]; ok && s.Status == "active" {
			live = append(live, s)
		}
	}
	return live, nil
}

// finished returns the stored file of key, or the error of its recorded
// failure; nil and nil while the job has neither.
func (c *Client) finished(ctx context.Context, key string) ([]byte, error) {
	if data, err := c.store.Result(ctx, key); err != nil || data != nil {
		return data, err
	}
	if f, err := c.store.LastFailure(ctx, key); err != nil || f != nil {
		return nil, errors.Join(err, failureError(f))
	}
	return nil, nil
}

// failureError maps a recorded failure to the error Render returns.
func failureError(f *Failure) error {
	if f == nil {
		return nil
	}
	switch f.Code {
	case FailureUnavailable, FailureExhausted:
		// Every retry failed (a lost browser, a worker killed each time):
		// the renderer cannot serve it now, which is a 503, not a 500.
		return &UnavailableError{Reason: RendererDown, RetryAfter: retryNoWorker, Detail: f.Message}
	case FailureTooLong:
		return &TooLongError{MaxPages: f.MaxPages}
	case FailureContentTimeout:
		return &TooLongError{}
	}
	return &FailedError{Code: f.Code, Message: f.Message}
}
