package batch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/opencrm/crm/pkg/batch"
)

func TestDoReturnsEachCallersOwnOutput(t *testing.T) {
	t.Parallel()
	var flushes, maxSeen atomic.Int64
	release := make(chan struct{})
	b, err := batch.New(func(ctx context.Context, items []int) ([]int, error) {
		if flushes.Add(1) == 1 {
			<-release // hold the first flush so the others queue behind it
		}
		if n := int64(len(items)); n > maxSeen.Load() {
			maxSeen.Store(n)
		}
		out := make([]int, len(items))
		for i, v := range items {
			out[i] = v * 10
		}
		return out, nil
	}, 8, 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	got := make([]int, n)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); got[0], _ = b.Do(context.Background(), 0) }()
	for flushes.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := b.Do(context.Background(), i)
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	want := make([]int, n)
	for i := range want {
		want[i] = i * 10
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	if maxSeen.Load() != 8 {
		t.Errorf("largest flush = %d items, want the cap of 8 (queued calls batch together)", maxSeen.Load())
	}
	if f := flushes.Load(); f > 1+(n-1+7)/8 {
		t.Errorf("%d flushes for %d calls, want batching", f, n)
	}
}

func TestFlushErrorFailsEveryItemOfThatFlush(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name  string
		flush batch.Func[int, int]
		want  string
	}{
		{"error", func(context.Context, []int) ([]int, error) { return nil, boom }, "boom"},
		{"short answer", func(context.Context, []int) ([]int, error) { return nil, nil }, "batch: flush returned 0 outputs for 1 items"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := batch.New(tt.flush, 4, 2, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			_, err = b.Do(context.Background(), 1)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestFlushRunsUnderItsOwnTimeoutNotTheCallers(t *testing.T) {
	t.Parallel()
	started, done := make(chan struct{}), make(chan error, 1)
	b, err := batch.New(func(ctx context.Context, items []int) ([]int, error) {
		close(started)
		<-ctx.Done()
		done <- ctx.Err()
		return nil, ctx.Err()
	}, 4, 1, 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }() // the caller leaves mid-flush
	if _, err := b.Do(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want context.Canceled", err)
	}
	if err := <-done; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("flush ended with %v, want its own deadline", err)
	}
}

func TestNewRejectsBadSettings(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, []int) ([]int, error) { return nil, nil }
	for _, tt := range []struct {
		name         string
		flush        batch.Func[int, int]
		max, workers int
		timeout      time.Duration
	}{
		{"no func", nil, 1, 1, time.Second},
		{"max 0", ok, 0, 1, time.Second},
		{"workers 0", ok, 1, 0, time.Second},
		{"no timeout", ok, 1, 1, 0},
	} {
		if _, err := batch.New(tt.flush, tt.max, tt.workers, tt.timeout); err == nil {
			t.Errorf("%s: New succeeded", tt.name)
		}
	}
}

func TestCallerThatGaveUpIsNotFlushed(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var seen sync.Map
	b, err := batch.New(func(ctx context.Context, items []string) ([]string, error) {
		for _, it := range items {
			seen.Store(it, true)
			if it == "first" {
				<-release
			}
		}
		return items, nil
	}, 8, 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	firstDone := make(chan struct{})
	go func() { defer close(firstDone); _, _ = b.Do(context.Background(), "first") }()
	for _, ok := seen.Load("first"); !ok; _, ok = seen.Load("first") {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := b.Do(ctx, "gave-up"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do = %v, want its deadline", err)
	}
	close(release)
	<-firstDone
	if v, err := b.Do(context.Background(), "later"); err != nil || v != "later" {
		t.Fatalf("Do(later) = %q, %v", v, err)
	}
	if _, ok := seen.Load("gave-up"); ok {
		t.Error("a call whose caller gave up while queued was flushed")
	}
}

// TestFlushContinuesTheFirstCallersTrace: a flush runs under the span of
// the first caller it serves, so that caller's trace shows the shared work.
func TestFlushContinuesTheFirstCallersTrace(t *testing.T) {
	t.Parallel()
	tr := sdktrace.NewTracerProvider().Tracer("test")
	var callers []trace.Span
	release := make(chan struct{})
	type flush struct {
		span  trace.Span
		items int
	}
	seen := make(chan flush, 2)
	b, err := batch.New(func(ctx context.Context, items []int) ([]int, error) {
		if items[0] == 0 {
			<-release // hold the first flush so the next two queue together
		}
		seen <- flush{trace.SpanFromContext(ctx), len(items)}
		return items, nil
	}, 8, 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 3 {
		ctx, span := tr.Start(context.Background(), fmt.Sprint("caller ", i), trace.WithSpanKind(trace.SpanKindServer))
		callers = append(callers, span)
		wg.Go(func() {
			if _, err := b.Do(ctx, i); err != nil {
				t.Error(err)
			}
		})
		time.Sleep(20 * time.Millisecond)
	}
	close(release)
	wg.Wait()
	for _, span := range callers {
		defer span.End()
	}
	want := []flush{{callers[0], 1}, {callers[1], 2}} // callers 1 and 2 under caller 1's span
	for i, w := range want {
		if got := <-seen; got.span != w.span || got.items != w.items || !got.span.IsRecording() {
			t.Errorf("flush %d: %d items under span %s (recording %v); want %d under %s", i, got.items,
				got.span.SpanContext().SpanID(), got.span.IsRecording(), w.items, w.span.SpanContext().SpanID())
		}
	}
}
