package tracing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Batching is how Batcher groups spans for the exporter: the standard
// OTEL_BSP_* settings, read by config.Parse.
type Batching struct {
	// Delay is the longest a span waits before it is exported
	// (OTEL_BSP_SCHEDULE_DELAY, milliseconds as the specification has it).
	Delay   time.Duration
	DelayMS int `env:"OTEL_BSP_SCHEDULE_DELAY" envDefault:"5000" min:"1" max:"86400000"`
	// Timeout bounds one export (OTEL_BSP_EXPORT_TIMEOUT, milliseconds).
	Timeout   time.Duration
	TimeoutMS int `env:"OTEL_BSP_EXPORT_TIMEOUT" envDefault:"30000" min:"1" max:"86400000"`
	// MaxQueue is how many ended spans may wait; beyond it spans are
	// dropped rather than slowing requests (OTEL_BSP_MAX_QUEUE_SIZE).
	MaxQueue int `env:"OTEL_BSP_MAX_QUEUE_SIZE" envDefault:"2048" min:"1" max:"1048576"`
	// MaxBatch is the most spans one export carries; a full batch is
	// exported at once (OTEL_BSP_MAX_EXPORT_BATCH_SIZE).
	MaxBatch int `env:"OTEL_BSP_MAX_EXPORT_BATCH_SIZE" envDefault:"512" min:"1" max:"1048576"`
}

// Validate turns the millisecond settings into durations and checks that a
// batch fits the queue.
func (b *Batching) Validate() error {
	b.Delay = time.Duration(b.DelayMS) * time.Millisecond
	b.Timeout = time.Duration(b.TimeoutMS) * time.Millisecond
	if b.MaxBatch > b.MaxQueue {
		return errors.New("OTEL_BSP_MAX_EXPORT_BATCH_SIZE: must not exceed OTEL_BSP_MAX_QUEUE_SIZE")
	}
	return nil
}

// DefaultBatching is the OpenTelemetry specification's defaults.
var DefaultBatching = Batching{Delay: 5 * time.Second, Timeout: 30 * time.Second, MaxQueue: 2048, MaxBatch: 512}

// Batcher is the span processor Setup installs: the batch span processor
// of the OpenTelemetry specification (same settings, same batches at the
// exporter), queued differently from the SDK's.
//
// The SDK's processor hands each ended span over a channel to its export
// goroutine, which wakes for every span to append it to the batch. A
// service ends its spans in bursts (a request's SQL statements), and each
// hand-off woke that goroutine on another thread: in a profile of the
// leads service under the tracing benchmark the channel send and the
// futex calls and spinning threads it caused were a tenth of the
// service's CPU, more than the spans themselves. Here ending a span
// appends it under a mutex, and the export goroutine wakes only when a
// batch is full or the delay has passed.
type Batcher struct {
	exp sdktrace.SpanExporter
	cfg Batching

	mu      sync.Mutex
	queue   []sdktrace.ReadOnlySpan
	spare   []sdktrace.ReadOnlySpan // the other buffer, swapped in by take
	dropped int
	closed  bool

	full     chan struct{} // holds one signal: a batch is ready
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	// exporting serialises exports: exporters need not be safe for
	// concurrent use, and ForceFlush may run beside the goroutine.
	exporting sync.Mutex
}

var _ sdktrace.SpanProcessor = (*Batcher)(nil)

// NewBatcher starts a processor exporting to exp; Shutdown stops it.
func NewBatcher(exp sdktrace.SpanExporter, cfg Batching) (*Batcher, error) {
	if exp == nil || cfg.Delay <= 0 || cfg.Timeout <= 0 || cfg.MaxBatch < 1 || cfg.MaxQueue < cfg.MaxBatch {
		return nil, fmt.Errorf("tracing: batcher needs an exporter, a positive delay and timeout, and 1 ≤ max batch ≤ max queue (got %+v)", cfg)
	}
	b := &Batcher{exp: exp, cfg: cfg, full: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		queue: make([]sdktrace.ReadOnlySpan, 0, cfg.MaxBatch), spare: make([]sdktrace.ReadOnlySpan, 0, cfg.MaxBatch)}
	go b.run()
	return b, nil
}

// OnStart does nothing: spans are batched once they end.
func (b *Batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues a sampled span, or drops it when the queue is full or the
// processor has shut down.
func (b *Batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	if len(b.queue) >= b.cfg.MaxQueue {
		b.dropped++
		b.mu.Unlock()
		return
	}
	b.queue = append(b.queue, s)
	ready := len(b.queue) == b.cfg.MaxBatch
	b.mu.Unlock()
	if ready {
		select {
		case b.full <- struct{}{}:
		default:
		}
	}
}

func (b *Batcher) run() {
	defer close(b.done)
	tick := time.NewTicker(b.cfg.Delay)
	defer tick.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-tick.C:
		case <-b.full:
		}
		ctx, cancel := context.WithTimeout(context.Background(), b.cfg.Timeout)
		if err := b.exportQueued(ctx); err != nil {
			otel.Handle(err)
		}
		cancel()
	}
}

// exportQueued exports every queued span, MaxBatch at a time.
func (b *Batcher) exportQueued(ctx context.Context) error {
	b.exporting.Lock()
	defer b.exporting.Unlock()
	spans, dropped := b.take()
	var err error
	if dropped > 0 {
		err = fmt.Errorf("tracing: %d spans dropped: the export queue (OTEL_BSP_MAX_QUEUE_SIZE=%d) was full", dropped, b.cfg.MaxQueue)
	}
	for len(spans) > 0 {
		n := min(len(spans), b.cfg.MaxBatch)
		if e := b.exp.ExportSpans(ctx, spans[:n]); e != nil {
			err = errors.Join(err, fmt.Errorf("tracing: export %d spans: %w", n, e))
		}
		spans = spans[n:]
	}
	return err
}

// take empties the queue, returning what it held and how many spans were
// dropped since the last take. The two buffers take turns, so a busy
// process appends without allocating; the one taken is reused only at the
// next take, after this export (serialised by exporting) is done with it.
func (b *Batcher) take() ([]sdktrace.ReadOnlySpan, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	spans := b.queue
	clear(b.spare)
	b.queue, b.spare = b.spare[:0], spans
	dropped := b.dropped
	b.dropped = 0
	return spans, dropped
}

// ForceFlush exports every span queued so far.
func (b *Batcher) ForceFlush(ctx context.Context) error {
	return b.exportQueued(ctx)
}

// Shutdown stops the export goroutine, exports what is queued and shuts
// the exporter down; spans ending afterwards are dropped.
func (b *Batcher) Shutdown(ctx context.Context) error {
	var err error
	b.stopOnce.Do(func() {
		close(b.stop)
		select {
		case <-b.done:
		case <-ctx.Done():
		}
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		err = errors.Join(b.exportQueued(ctx), b.exp.Shutdown(ctx))
	})
	return err
}
