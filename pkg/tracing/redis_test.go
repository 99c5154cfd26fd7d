package tracing_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/opencrm/crm/pkg/testredis"
	"github.com/opencrm/crm/pkg/tracing"
)

// TestRedisSpans: in a recorded trace a command and a pipeline each get a
// client span under the caller's; with no recorded parent neither does.
// Not parallel: it counts every span the recorder gets.
func TestRedisSpans(t *testing.T) {
	opt, err := redis.ParseURL(testredis.URL("TRACING_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"))
	if err != nil {
		t.Fatal(err)
	}
	// One connection for commands and one for pipelines (go-redis keeps
	// them apart), made by the untraced run below, serve the traced one:
	// the commands that set a new connection up would be spans of their own.
	opt.PoolSize = 1
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	tracing.Redis(rdb)
	const key = "tracing-test:redis-spans"
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	run := func(ctx context.Context) {
		t.Helper()
		if err := rdb.Set(ctx, key, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		pipe := rdb.Pipeline()
		pipe.Get(ctx, key)
		pipe.Set(ctx, key, "w", 0)
		pipe.Get(ctx, key)
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}

	unsampled := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}}))
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"no trace", context.Background()}, {"a trace not sampled", unsampled}} {
		before := len(rec.Ended())
		run(c.ctx)
		for _, s := range rec.Ended()[before:] {
			t.Errorf("%s: span %q recorded", c.name, s.Name())
		}
	}

	ctx, server := tracing.Start(context.Background(), "request", trace.SpanKindServer)
	run(ctx)
	server.End()
	type span struct {
		Name   string
		Parent trace.SpanID
		Kind   trace.SpanKind
		Attrs  map[attribute.Key]string
	}
	var got []span
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() != server.SpanContext().TraceID() || s.Name() == "request" {
			continue
		}
		attrs := map[attribute.Key]string{}
		for _, a := range s.Attributes() {
			switch a.Key {
			case "db.system", "db.redis.num_cmd", "server.address":
				attrs[a.Key] = a.Value.Emit()
			}
		}
		got = append(got, span{s.Name(), s.Parent().SpanID(), s.SpanKind(), attrs})
	}
	parent := server.SpanContext().SpanID()
	want := []span{
		{"set", parent, trace.SpanKindClient, map[attribute.Key]string{"db.system": "redis", "server.address": "127.0.0.1"}},
		{"redis.pipeline get set", parent, trace.SpanKindClient,
			map[attribute.Key]string{"db.system": "redis", "db.redis.num_cmd": "3", "server.address": "127.0.0.1"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Redis spans (-want +got):\n%s", diff)
	}
}
