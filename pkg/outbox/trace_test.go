package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/pkg/tracing"
)

// TestEventCarriesTrace: the consumer's context continues the trace of the
// transaction that recorded the event, and the lag gauge sees the event
// while it waits.
func TestEventCarriesTrace(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := testdb.New(t, "outboxtest", outbox.Migrate, outbox.Migrations)
	rdb := newRedis(t)
	stream := randStream(t, rdb)

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	traced := tracing.Extract(ctx, tracing.Carrier{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"})
	if err := d.InTx(ctx, func(tx pgx.Tx) error {
		return outbox.Add(traced, tx, stream, "thing.created", "1", map[string]int{"id": 1})
	}); err != nil {
		t.Fatal(err)
	}
	if err := d.InTx(ctx, func(tx pgx.Tx) error {
		return outbox.Add(ctx, tx, stream, "thing.created", "2", map[string]int{"id": 2})
	}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(outbox.NewLagCollector(d))
	time.Sleep(20 * time.Millisecond)
	lag := gaugeValue(t, reg)
	if lag <= 0 {
		t.Errorf("lag with two events waiting = %v, want > 0", lag)
	}
	if _, err := (&outbox.Relay{DB: d, Redis: rdb}).Once(ctx); err != nil {
		t.Fatal(err)
	}
	if lag := gaugeValue(t, reg); lag != 0 {
		t.Errorf("lag once relayed = %v, want 0", lag)
	}

	got := make(chan string, 2)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	go (&outbox.Consumer{Redis: rdb, Stream: stream, Group: "g", Name: "c", Handle: func(ctx context.Context, ev outbox.Event) error {
		sc := trace.SpanContextFromContext(ctx)
		got <- ev.AggregateID + ":" + map[bool]string{true: sc.TraceID().String(), false: "untraced"}[sc.IsValid()]
		return nil
	}}).Run(cctx)
	want := map[string]bool{"1:" + traceID: true, "2:untraced": true}
	for range 2 {
		select {
		case g := <-got:
			if !want[g] {
				t.Errorf("handled %q, want one of %v", g, want)
			}
			delete(want, g)
		case <-ctx.Done():
			t.Fatal("events not consumed")
		}
	}
}

func gaugeValue(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || len(mfs[0].GetMetric()) != 1 {
		t.Fatalf("gather: %v %v", err, mfs)
	}
	return mfs[0].GetMetric()[0].GetGauge().GetValue()
}
