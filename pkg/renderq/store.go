package renderq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// TaskType is the asynq task type of a render job.
const TaskType = "render:job"

// Priority chooses the queue of a job. The worker serves the interactive
// queue strictly before the batch queue, so a user waiting for a download is
// never stuck behind a bulk export.
type Priority int

// The priorities.
const (
	Interactive Priority = iota
	Batch
)

// Queues names the two asynq queues and prefixes the Redis keys of stored
// results, so several deployments (or parallel tests) can share one Redis.
type Queues struct {
	Prefix string `env:"RENDER_QUEUE_PREFIX" envDefault:"render"`
}

// DefaultPrefix is the queue and key prefix when none is configured.
const DefaultPrefix = "render"

// Name returns the asynq queue of a priority.
func (q Queues) Name(p Priority) string {
	if p == Batch {
		return q.prefix() + "-batch"
	}
	return q.prefix() + "-interactive"
}

// All returns both queue names, interactive first.
func (q Queues) All() []string { return []string{q.Name(Interactive), q.Name(Batch)} }

func (q Queues) prefix() string {
	if q.Prefix == "" {
		return DefaultPrefix
	}
	return q.Prefix
}

// NewTask wraps a job in an asynq task.
func NewTask(job Job) (*asynq.Task, error) {
	payload, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	return asynq.NewTask(TaskType, payload), nil
}

// ParseTask reads the job of a task.
func ParseTask(t *asynq.Task) (Job, error) {
	var job Job
	if err := json.Unmarshal(t.Payload(), &job); err != nil {
		return Job{}, fmt.Errorf("renderq: bad payload: %w", err)
	}
	return job, job.Validate()
}

// Failure codes a worker records for a job it could not render.
const (
	// FailureUnavailable: the renderer (Chromium) could not run the job now.
	FailureUnavailable = "renderer_unavailable"
	// FailureInvalid: the job itself cannot be rendered; retrying is useless.
	FailureInvalid = "invalid_job"
	// FailureExhausted: every retry failed.
	FailureExhausted = "retries_exhausted"
	// FailureTooLong: the document has more pages than the worker's
	// RENDER_MAX_PAGES; never retried.
	FailureTooLong = "document_too_long"
	// FailureContentTimeout: the document did not print within the
	// worker's RENDER_JOB_TIMEOUT on a healthy browser, so its content is to
	// blame; never retried.
	FailureContentTimeout = "content_timeout"
)

// Store is the Redis layout shared by the worker and the client:
//
//	{prefix}:result:{key}  the rendered file, with a TTL
//	{prefix}:failure:{key} a failure code and message, with a short TTL
//	{prefix}:done:{key}    pub/sub channel announcing either of the above
//
// Redis rather than PostgreSQL: the worker already depends on Redis (asynq),
// results are derived data that can be re-rendered at any time, and a TTL
// bounds the memory without a cleanup job. See docs/decisions.md.
type Store struct {
	rdb        redis.UniversalClient
	prefix     string
	resultTTL  time.Duration
	failureTTL time.Duration
}

// NewStore returns the store of the given queues. resultTTL bounds how long
// a rendered file is kept; failures are kept for a short, fixed time so a
// burst of clicks does not re-run a failing job.
func NewStore(rdb redis.UniversalClient, q Queues, resultTTL time.Duration) *Store {
	return &Store{rdb: rdb, prefix: q.prefix(), resultTTL: resultTTL, failureTTL: 10 * time.Second}
}

func (s *Store) resultKey(key string) string  { return s.prefix + ":result:" + key }
func (s *Store) failureKey(key string) string { return s.prefix + ":failure:" + key }
func (s *Store) channel(key string) string    { return s.prefix + ":done:" + key }

// Result returns the stored file, or nil and no error when there is none.
func (s *Store) Result(ctx context.Context, key string) ([]byte, error) {
	b, err := s.rdb.Get(ctx, s.resultKey(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return b, err
}

// HasResult reports whether a file is stored, without reading it.
func (s *Store) HasResult(ctx context.Context, key string) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.resultKey(key)).Result()
	return n > 0, err
}

// Failure is a recorded failure of a job.
type Failure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// MaxPages is the worker's page cap, with FailureTooLong.
	MaxPages int `json:"max_pages,omitempty"`
}

// LastFailure returns the recorded failure, or nil.
func (s *Store) LastFailure(ctx context.Context, key string) (*Failure, error) {
	b, err := s.rdb.Get(ctx, s.failureKey(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f Failure
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// PutResult stores a rendered file and tells waiting clients.
func (s *Store) PutResult(ctx context.Context, key string, data []byte) error {
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, s.resultKey(key), data, s.resultTTL)
		p.Del(ctx, s.failureKey(key))
		p.Publish(ctx, s.channel(key), "ok")
		return nil
	})
	return err
}

// PutFailure records a failure and tells waiting clients.
func (s *Store) PutFailure(ctx context.Context, key string, f Failure) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, s.failureKey(key), b, s.failureTTL)
		p.Publish(ctx, s.channel(key), "failed")
		return nil
	})
	return err
}

// Delete removes the stored result and failure of a key.
func (s *Store) Delete(ctx context.Context, key string) error {
	return s.rdb.Del(ctx, s.resultKey(key), s.failureKey(key)).Err()
}

// subscribe listens for the completion of key; the subscription is active
// when it returns.
func (s *Store) subscribe(ctx context.Context, key string) (*redis.PubSub, error) {
	ps := s.rdb.Subscribe(ctx, s.channel(key))
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return nil, err
	}
	return ps, nil
}
