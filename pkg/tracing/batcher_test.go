package tracing_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/opencrm/crm/pkg/tracing"
)

// exporter records the names of the spans it is given. With release set,
// each export first says so on entered and then waits until release is
// closed.
type exporter struct {
	mu       sync.Mutex
	names    []string
	batches  []int
	shutdown bool

	release, entered chan struct{}
}

func (e *exporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.release != nil {
		e.entered <- struct{}{}
		<-e.release
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range spans {
		e.names = append(e.names, s.Name())
	}
	e.batches = append(e.batches, len(spans))
	return nil
}

func (e *exporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.shutdown = true
	return nil
}

func (e *exporter) exported() (names []string, batches []int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.names...), append([]int(nil), e.batches...)
}

// waitFor polls until the exporter holds n spans.
func (e *exporter) waitFor(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		names, _ := e.exported()
		if len(names) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("exported %d spans, want %d", len(names), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// batcher returns a Batcher exporting to e and a function ending a span of
// each name given (under a tracer provider sampling every span).
func batcher(t *testing.T, e *exporter, cfg tracing.Batching) (*tracing.Batcher, func(names ...string)) {
	t.Helper()
	b, err := tracing.NewBatcher(e, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Shutdown(context.Background()) })
	tr := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b)).Tracer("test")
	return b, func(names ...string) {
		for _, n := range names {
			_, span := tr.Start(context.Background(), n)
			span.End()
		}
	}
}

// TestBatcherExportsAFullBatchAtOnce: a full batch leaves without waiting
// for the delay; what is short of a batch waits for it (or a flush).
func TestBatcherExportsAFullBatchAtOnce(t *testing.T) {
	t.Parallel()
	e := &exporter{}
	b, end := batcher(t, e, tracing.Batching{Delay: time.Hour, Timeout: time.Second, MaxQueue: 10, MaxBatch: 3})
	end("a", "b", "c")
	e.waitFor(t, 3)
	end("d", "e")
	time.Sleep(50 * time.Millisecond)
	if names, _ := e.exported(); len(names) != 3 {
		t.Fatalf("exported %v before a full batch or the delay", names)
	}
	if err := b.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	names, batches := e.exported()
	if diff := cmp.Diff([]string{"a", "b", "c", "d", "e"}, names); diff != "" {
		t.Errorf("exported (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{3, 2}, batches); diff != "" {
		t.Errorf("batch sizes (-want +got):\n%s", diff)
	}
}

// TestBatcherExportsAfterTheDelay: a lone span is exported once the delay
// has passed.
func TestBatcherExportsAfterTheDelay(t *testing.T) {
	t.Parallel()
	e := &exporter{}
	_, end := batcher(t, e, tracing.Batching{Delay: 20 * time.Millisecond, Timeout: time.Second, MaxQueue: 100, MaxBatch: 50})
	end("lone")
	e.waitFor(t, 1)
}

// TestBatcherSplitsIntoBatches: however many spans a flush finds, it
// exports them in batches of at most MaxBatch.
func TestBatcherSplitsIntoBatches(t *testing.T) {
	t.Parallel()
	e := &exporter{}
	b, end := batcher(t, e, tracing.Batching{Delay: time.Hour, Timeout: time.Second, MaxQueue: 100, MaxBatch: 4})
	end("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11")
	if err := b.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	names, batches := e.exported()
	if len(names) != 11 {
		t.Fatalf("exported %v, want 11 spans", names)
	}
	for _, n := range batches {
		if n < 1 || n > 4 {
			t.Fatalf("batch sizes %v, want each in [1, 4]", batches)
		}
	}
}

// TestBatcherDropsWhenTheQueueIsFull: while the exporter is busy, spans
// beyond MaxQueue are dropped (a request never waits for the exporter),
// and the next export reports how many to OpenTelemetry's error handler.
func TestBatcherDropsWhenTheQueueIsFull(t *testing.T) {
	t.Parallel()
	e := &exporter{release: make(chan struct{}), entered: make(chan struct{}, 10)}
	_, end := batcher(t, e, tracing.Batching{Delay: time.Hour, Timeout: time.Second, MaxQueue: 4, MaxBatch: 2})
	end("1", "2")
	<-e.entered // a full batch: the goroutine exports it and waits
	end("3", "4", "5", "6", "dropped", "dropped too")
	close(e.release)
	e.waitFor(t, 6)
	names, _ := e.exported()
	if diff := cmp.Diff([]string{"1", "2", "3", "4", "5", "6"}, names); diff != "" {
		t.Errorf("exported (-want +got):\n%s", diff)
	}
	handled.waitFor(t, "tracing: 2 spans dropped: the export queue (OTEL_BSP_MAX_QUEUE_SIZE=4) was full")
}

// TestBatcherShutdown exports what is queued, shuts the exporter down and
// drops the spans that end afterwards.
func TestBatcherShutdown(t *testing.T) {
	t.Parallel()
	e := &exporter{}
	b, end := batcher(t, e, tracing.Batching{Delay: time.Hour, Timeout: time.Second, MaxQueue: 10, MaxBatch: 5})
	end("queued")
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	end("late")
	if err := b.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	names, _ := e.exported()
	if diff := cmp.Diff([]string{"queued"}, names); diff != "" {
		t.Errorf("exported (-want +got):\n%s", diff)
	}
	if !e.shutdown {
		t.Error("exporter not shut down")
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Errorf("second shutdown: %v", err)
	}
}

// TestBatcherConcurrentSpans: spans ended from many goroutines at once are
// each exported exactly once.
func TestBatcherConcurrentSpans(t *testing.T) {
	t.Parallel()
	e := &exporter{}
	b, end := batcher(t, e, tracing.Batching{Delay: time.Millisecond, Timeout: time.Second, MaxQueue: 100_000, MaxBatch: 7})
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				end(fmt.Sprintf("%d-%d", g, i))
			}
		})
	}
	wg.Wait()
	if err := b.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	names, _ := e.exported()
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Fatalf("span %s exported twice", n)
		}
		seen[n] = true
	}
	if len(seen) != goroutines*each {
		t.Fatalf("exported %d spans, want %d", len(seen), goroutines*each)
	}
}

// TestNewBatcherRejectsBadSettings: every setting must make sense.
func TestNewBatcherRejectsBadSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  func(b *tracing.Batching)
	}{
		{"no delay", func(b *tracing.Batching) { b.Delay = 0 }},
		{"no timeout", func(b *tracing.Batching) { b.Timeout = 0 }},
		{"empty batch", func(b *tracing.Batching) { b.MaxBatch = 0 }},
		{"batch above the queue", func(b *tracing.Batching) { b.MaxQueue = b.MaxBatch - 1 }},
	}
	for _, tt := range tests {
		cfg := tracing.DefaultBatching
		tt.cfg(&cfg)
		if _, err := tracing.NewBatcher(&exporter{}, cfg); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
	if _, err := tracing.NewBatcher(nil, tracing.DefaultBatching); err == nil {
		t.Error("no exporter: no error")
	}
}

// TestBatchingSettings: the OTEL_BSP_* variables, in milliseconds and spans.
func TestBatchingSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want tracing.Batching
		err  string
	}{
		{"defaults", nil, tracing.Batching{Delay: 5 * time.Second, DelayMS: 5000, Timeout: 30 * time.Second, TimeoutMS: 30000, MaxQueue: 2048, MaxBatch: 512}, ""},
		{"set", map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_BSP_EXPORT_TIMEOUT": "2000",
			"OTEL_BSP_MAX_QUEUE_SIZE": "4096", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1024"},
			tracing.Batching{Delay: 100 * time.Millisecond, DelayMS: 100, Timeout: 2 * time.Second, TimeoutMS: 2000, MaxQueue: 4096, MaxBatch: 1024}, ""},
		{"delay not a number", map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "5s"}, tracing.Batching{},
			`OTEL_BSP_SCHEDULE_DELAY: must be an integer, got "5s"`},
		{"zero queue", map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "0"}, tracing.Batching{},
			"OTEL_BSP_MAX_QUEUE_SIZE: must be between 1 and 1048576, got 0"},
		{"batch above the queue", map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "200"}, tracing.Batching{},
			"OTEL_BSP_MAX_EXPORT_BATCH_SIZE: must not exceed OTEL_BSP_MAX_QUEUE_SIZE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if c, ok := load(t, tt.env, tt.err); ok {
				if diff := cmp.Diff(tt.want, c.Batching); diff != "" {
					t.Errorf("batching (-want +got):\n%s", diff)
				}
			}
		})
	}
}
