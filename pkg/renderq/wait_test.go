package renderq_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/renderq"
)

// stuckEnv is a Redis slice with a live asynq worker on its queues whose
// handler holds every job until released: the worker is "alive", the job
// is running, and no result ever comes unless the test says so.
type stuckEnv struct {
	cfg     renderq.Config
	rdb     *redis.Client
	release chan struct{}
}

func newStuckEnv(t *testing.T, wait time.Duration) stuckEnv {
	t.Helper()
	url := os.Getenv("RENDER_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/9"
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	q := renderq.Queues{Prefix: "rqtest-" + hex.EncodeToString(b)}
	env := stuckEnv{
		cfg:     renderq.Config{RedisURL: url, Queues: q, Wait: wait, ResultTTL: time.Minute, MaxRetry: 0, PerUser: 2},
		rdb:     rdb,
		release: make(chan struct{}),
	}
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency: 16, Queues: map[string]int{q.Name(renderq.Interactive): 1, q.Name(renderq.Batch): 1},
		TaskCheckInterval: 25 * time.Millisecond, LogLevel: asynq.FatalLevel,
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc(renderq.TaskType, func(ctx context.Context, _ *asynq.Task) error {
		select {
		case <-ctx.Done():
		case <-env.release:
		}
		return nil
	})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(env.release)
		srv.Shutdown()
		insp := asynq.NewInspectorFromRedisClient(rdb)
		for _, name := range q.All() {
			_ = insp.DeleteQueue(name, true)
		}
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, q.Prefix+":*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		rdb.Close()
	})
	// Wait for the worker's first heartbeat, so Render sees it alive.
	insp := asynq.NewInspectorFromRedisClient(rdb)
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		servers, _ := insp.Servers()
		for _, s := range servers {
			if _, ok := s.Queues[q.Name(renderq.Interactive)]; ok && s.Status == "active" {
				return env
			}
		}
	}
	t.Fatal("stuck worker did not come up")
	return env
}

func (e stuckEnv) client(t *testing.T) *renderq.Client {
	t.Helper()
	c, err := renderq.NewClient(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestWaitTimeoutIs503: however a render wait ends without a result (the
// client's own wait, a caller deadline shorter than, equal to or just past
// the wait, a deadline already spent), the answer is a 503 problem with
// Retry-After, never an error that problem.From turns into a 500. Only a
// caller that went away (cancelled) gets its context error back.
func TestWaitTimeoutIs503(t *testing.T) {
	t.Parallel()
	const wait = 400 * time.Millisecond
	env := newStuckEnv(t, wait)
	c := env.client(t)
	tests := []struct {
		name     string
		deadline time.Duration // 0: no caller deadline
	}{
		{"wait only", 0},
		{"caller deadline shorter", wait / 2},
		{"caller deadline equal", wait},
		{"caller deadline just longer", wait + 5*time.Millisecond},
		{"caller deadline at a poll", time.Second},
		{"caller deadline tiny", time.Millisecond},
		{"caller deadline 3ms", 3 * time.Millisecond},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			job := renderq.Job{Format: renderq.PDF, HTML: fmt.Sprintf("<p>stuck %d</p>", i)}
			_, err := c.Render(ctx, job, renderq.Interactive, "")
			p := problem.From(err)
			if p.Status != http.StatusServiceUnavailable || p.Code != "upstream_unavailable" || p.RetryAfter < 1 {
				t.Errorf("got %d %s retry %d (%v), want 503 upstream_unavailable with Retry-After", p.Status, p.Code, p.RetryAfter, err)
			}
		})
	}
	t.Run("caller cancelled", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err := c.Render(ctx, renderq.Job{Format: renderq.PDF, HTML: "<p>gone</p>"}, renderq.Interactive, "")
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	})
}

// TestPerUserInFlight: a user has at most PerUser renders in flight; the
// next is 429 rate_limited with Retry-After, another user is not affected,
// a stored result is served without a slot, and a finished render frees
// its slot.
func TestPerUserInFlight(t *testing.T) {
	t.Parallel()
	env := newStuckEnv(t, 3*time.Second)
	c := env.client(t)
	job := func(s string) renderq.Job { return renderq.Job{Format: renderq.PDF, HTML: "<p>" + s + "</p>"} }
	ctx := context.Background()

	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() { _, _ = c.Render(ctx, job(fmt.Sprintf("a%d", i)), renderq.Interactive, "alice") })
	}
	// Both of alice's renders hold their slots once their tasks are active.
	insp := asynq.NewInspectorFromRedisClient(env.rdb)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, err := insp.GetQueueInfo(env.cfg.Queues.Name(renderq.Interactive))
		if err == nil && info.Active == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("alice's renders never became active")
		}
	}

	_, err := c.Render(ctx, job("a3"), renderq.Interactive, "alice")
	want := problem.BodyOf(&problem.Error{Status: 429, Code: "rate_limited", Title: "Too Many Requests",
		Detail: "at most 2 documents may be rendering for you at once; retry when one is done"}, "")
	p := problem.From(err)
	if diff := cmp.Diff(want, problem.BodyOf(p, "")); diff != "" {
		t.Errorf("third render of alice (-want +got):\n%s", diff)
	}
	if p.RetryAfter < 1 || p.RetryAfter > 5 {
		t.Errorf("Retry-After = %d, want 1..5", p.RetryAfter)
	}

	// Bob is not affected; a stored result needs no slot.
	store := renderq.NewStore(env.rdb, env.cfg.Queues, time.Minute)
	if err := store.PutResult(ctx, env.cfg.Settle(job("b1")).Key(), []byte("%PDF-stored")); err != nil {
		t.Fatal(err)
	}
	if data, err := c.Render(ctx, job("b1"), renderq.Interactive, "alice"); err != nil || string(data) != "%PDF-stored" {
		t.Errorf("stored result for a busy user: %q, %v", data, err)
	}
	bobCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = c.Render(bobCtx, job("b2"), renderq.Interactive, "bob")
	if p := problem.From(err); p.Status != http.StatusServiceUnavailable {
		t.Errorf("bob: got %d (%v), want 503 (his render ran and timed out, not refused)", p.Status, err)
	}

	// Alice's renders end (timeout at 3 s); her slots are free again.
	wg.Wait()
	shortCtx, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel2()
	_, err = c.Render(shortCtx, job("a4"), renderq.Interactive, "alice")
	if p := problem.From(err); p.Status != http.StatusServiceUnavailable {
		t.Errorf("alice after her renders ended: got %d (%v), want 503", p.Status, err)
	}
}

// TestTooLongIsProblem422: a worker's page-cap refusal and a content
// timeout reach the client as 422 document_too_long, not as 500.
func TestTooLongIsProblem422(t *testing.T) {
	t.Parallel()
	env := newStuckEnv(t, 3*time.Second)
	c := env.client(t)
	store := renderq.NewStore(env.rdb, env.cfg.Queues, time.Minute)
	ctx := context.Background()
	tests := []struct {
		name    string
		failure renderq.Failure
		detail  string
	}{
		{"page cap", renderq.Failure{Code: renderq.FailureTooLong, Message: "x", MaxPages: 300},
			"the document has more than 300 pages, the most that can be rendered; shorten it"},
		{"content timeout", renderq.Failure{Code: renderq.FailureContentTimeout, Message: "x"},
			"the document's layout is too heavy to render in time (very long or very large content); shorten or simplify it"},
	}
	for i, tc := range tests {
		job := renderq.Job{Format: renderq.PDF, HTML: fmt.Sprintf("<p>long %d</p>", i)}
		if err := store.PutFailure(ctx, env.cfg.Settle(job).Key(), tc.failure); err != nil {
			t.Fatal(err)
		}
		_, err := c.Render(ctx, job, renderq.Interactive, "carol")
		want := problem.BodyOf(&problem.Error{Status: 422, Code: "document_too_long", Title: "Unprocessable Entity", Detail: tc.detail}, "")
		if diff := cmp.Diff(want, problem.BodyOf(problem.From(err), "")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestRefusalCooldown: a render refused for its content keeps the user's
// slot for the cooldown, so a user sending one huge document after another
// is answered 429 instead of keeping the worker busy; the slot frees when
// the cooldown ends, and other users are not affected.
func TestRefusalCooldown(t *testing.T) {
	t.Parallel()
	env := newStuckEnv(t, 3*time.Second)
	env.cfg.PerUser, env.cfg.Cooldown = 1, 600*time.Millisecond
	c := env.client(t)
	store := renderq.NewStore(env.rdb, env.cfg.Queues, time.Minute)
	ctx := context.Background()
	// The stuck worker never answers; the test records the refusal as a
	// worker would, once the task runs.
	huge := renderq.Job{Format: renderq.PDF, HTML: "<p>huge</p>"}
	go func() {
		waitForTask(t, env)
		_ = store.PutFailure(ctx, env.cfg.Settle(huge).Key(), renderq.Failure{Code: renderq.FailureTooLong, Message: "x", MaxPages: 300})
	}()
	_, err := c.Render(ctx, huge, renderq.Interactive, "dave")
	if p := problem.From(err); p.Code != "document_too_long" {
		t.Fatalf("huge: %v, want document_too_long", err)
	}
	next := renderq.Job{Format: renderq.PDF, HTML: "<p>next</p>"}
	_, err = c.Render(ctx, next, renderq.Interactive, "dave")
	if p := problem.From(err); p.Status != http.StatusTooManyRequests {
		t.Errorf("right after a refusal: %v, want 429", err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = c.Render(short, next, renderq.Interactive, "erin")
	if p := problem.From(err); p.Status != http.StatusServiceUnavailable {
		t.Errorf("another user: %v, want 503 (rendered, timed out), not refused", err)
	}
	time.Sleep(700 * time.Millisecond)
	short2, cancel2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel2()
	_, err = c.Render(short2, renderq.Job{Format: renderq.PDF, HTML: "<p>later</p>"}, renderq.Interactive, "dave")
	if p := problem.From(err); p.Status != http.StatusServiceUnavailable {
		t.Errorf("after the cooldown: %v, want 503 (rendered, timed out), not 429", err)
	}
}

// waitForTask waits until a task is active on the interactive queue.
func waitForTask(t *testing.T, env stuckEnv) {
	insp := asynq.NewInspectorFromRedisClient(env.rdb)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if info, err := insp.GetQueueInfo(env.cfg.Queues.Name(renderq.Interactive)); err == nil && info.Active > 0 {
			return
		}
	}
	t.Error("no task became active")
}
