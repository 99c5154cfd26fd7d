// Package batch groups concurrent calls into one flush, so that work whose
// cost is mostly per round trip (a commit, an HTTP call) is paid once for
// many callers. There is no timer: a call waits only while earlier flushes
// are still running, so an idle system answers at single-call latency and a
// busy one forms batches by itself, like PostgreSQL's group commit.
package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Func handles items together and returns one output per item, in order.
// An error fails every item of the flush.
type Func[In, Out any] func(ctx context.Context, items []In) ([]Out, error)

// Batcher runs Func over whatever calls are waiting, with at most Workers
// flushes at a time and at most MaxItems items per flush.
type Batcher[In, Out any] struct {
	flush   Func[In, Out]
	max     int
	workers int
	timeout time.Duration

	mu      sync.Mutex
	pending []*call[In, Out]
	active  int
}

type call[In, Out any] struct {
	ctx  context.Context
	in   In
	out  Out
	err  error
	done chan struct{}
}

// New returns a Batcher. timeout bounds each flush: a flush serves many
// callers, so it runs under its own context rather than any one caller's.
func New[In, Out any](flush Func[In, Out], maxItems, workers int, timeout time.Duration) (*Batcher[In, Out], error) {
	if flush == nil || maxItems < 1 || workers < 1 || timeout <= 0 {
		return nil, errors.New("batch: needs a flush func, maxItems ≥ 1, workers ≥ 1 and a timeout")
	}
	return &Batcher[In, Out]{flush: flush, max: maxItems, workers: workers, timeout: timeout}, nil
}

// Do queues in and waits for its output. When ctx ends first, Do returns
// ctx's error; the item may still be flushed.
func (b *Batcher[In, Out]) Do(ctx context.Context, in In) (Out, error) {
	c := &call[In, Out]{ctx: ctx, in: in, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	start := b.active < b.workers
	if start {
		b.active++
	}
	b.mu.Unlock()
	if start {
		go b.drain()
	}
	select {
	case <-c.done:
		return c.out, c.err
	case <-ctx.Done():
		var zero Out
		return zero, ctx.Err()
	}
}

// drain flushes waiting calls until none is left. A worker leaves only
// when it finds the queue empty under the lock, so a queued call always has
// a worker coming for it.
func (b *Batcher[In, Out]) drain() {
	for {
		b.mu.Lock()
		n := min(len(b.pending), b.max)
		if n == 0 {
			b.active--
			b.mu.Unlock()
			return
		}
		calls := b.pending[:n:n]
		b.pending = append([]*call[In, Out](nil), b.pending[n:]...)
		b.mu.Unlock()
		b.run(calls)
	}
}

func (b *Batcher[In, Out]) run(queued []*call[In, Out]) {
	// A caller that gave up while queued is not flushed: nobody waits for
	// its answer.
	calls := queued[:0]
	for _, c := range queued {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			close(c.done)
			continue
		}
		calls = append(calls, c)
	}
	if len(calls) == 0 {
		return
	}
	items := make([]In, len(calls))
	for i, c := range calls {
		items[i] = c.in
	}
	// The flush continues the trace of the first caller it serves, under
	// that caller's span (instrumentation records only under a recording
	// span), so that trace shows the shared statement or call and what it
	// led to in the callee; the other callers' traces show their wait.
	parent := trace.ContextWithSpan(context.Background(), trace.SpanFromContext(calls[0].ctx))
	ctx, cancel := context.WithTimeout(parent, b.timeout)
	outs, err := b.flush(ctx, items)
	cancel()
	if err == nil && len(outs) != len(items) {
		err = fmt.Errorf("batch: flush returned %d outputs for %d items", len(outs), len(items))
	}
	for i, c := range calls {
		if err != nil {
			c.err = err
		} else {
			c.out = outs[i]
		}
		close(c.done)
	}
}
