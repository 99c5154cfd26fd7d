package tracing_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/opencrm/crm/pkg/buildinfo"
	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/logx"
	"github.com/opencrm/crm/pkg/testredis"
	"github.com/opencrm/crm/pkg/tracing"
)

// rec is the span recorder behind the global provider of this package's
// tests (instrumentation reads the global one, as in a process).
var rec = tracetest.NewSpanRecorder()

// handled keeps what reaches OpenTelemetry's error handler.
var handled errorLog

type errorLog struct {
	mu   sync.Mutex
	errs []string
}

func (l *errorLog) Handle(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err.Error())
}

// waitFor polls until an error with text msg was handled.
func (l *errorLog) waitFor(t *testing.T, msg string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		l.mu.Lock()
		found := slices.Contains(l.errs, msg)
		l.mu.Unlock()
		if found {
			return
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Fatalf("error %q not handled; handled %q", msg, l.errs)
}

func TestMain(m *testing.M) {
	otel.SetErrorHandler(&handled)
	tracing.Install(tracing.NewProvider(resource.Empty(), rec, 1))
	os.Exit(m.Run())
}

// spanByName finds the span called name in trace id. The recorder keeps
// every span of the process, so a name alone would also match the spans
// of an earlier run of the same test (go test -count=2).
func spanByName(t *testing.T, id trace.TraceID, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() == id && s.Name() == name {
			return s
		}
	}
	t.Fatalf("no span %q in trace %s", name, id)
	return nil
}

// TestSampler: entry spans start traces, their children follow, and a
// client span with no parent (a background poll) is not recorded.
func TestSampler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind trace.SpanKind
		want bool
	}{
		{trace.SpanKindServer, true},
		{trace.SpanKindConsumer, true},
		{trace.SpanKindClient, false},
		{trace.SpanKindInternal, false},
		{trace.SpanKindProducer, false},
	}
	for _, tt := range tests {
		_, span := tracing.Start(context.Background(), "root", tt.kind)
		if got := span.IsRecording(); got != tt.want {
			t.Errorf("root %v recording = %v, want %v", tt.kind, got, tt.want)
		}
		span.End()
	}
	ctx, server := tracing.Start(context.Background(), "server", trace.SpanKindServer)
	defer server.End()
	if _, child := tracing.Start(ctx, "child", trace.SpanKindClient); !child.IsRecording() {
		t.Error("child of a sampled server span not recorded")
	}
}

// TestAsynqHeaders: Enqueue carries the producer span in the task's
// headers and Middleware runs the job as its child.
func TestAsynqHeaders(t *testing.T) {
	t.Parallel()
	rdb := testredis.Client(t, "TRACING_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
	client := asynq.NewClientFromRedisClient(rdb)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	// A queue of this run only: another run (-count, a second go test)
	// neither sees its task nor deletes it first.
	queue := "tracing-test-asynq-headers-" + rand.Text()
	t.Cleanup(func() {
		if err := insp.DeleteQueue(queue, true); err != nil {
			t.Errorf("delete queue %s: %v", queue, err)
		}
	})

	ctx, server := tracing.Start(context.Background(), "request", trace.SpanKindServer)
	info, err := tracing.Enqueue(ctx, client, asynq.NewTask("test:job", []byte(`{"a":1}`)), asynq.Queue(queue))
	server.End()
	if err != nil {
		t.Fatal(err)
	}
	stored, err := insp.GetTaskInfo(queue, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	producer := spanByName(t, server.SpanContext().TraceID(), "test:job publish")
	if got, want := stored.Headers["traceparent"], "00-"+producer.SpanContext().TraceID().String()+"-"+producer.SpanContext().SpanID().String()+"-01"; got != want {
		t.Errorf("traceparent header = %q, want %q", got, want)
	}
	if string(stored.Payload) != `{"a":1}` {
		t.Errorf("payload changed: %s", stored.Payload)
	}

	var jobCtx context.Context
	h := tracing.Middleware(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		jobCtx = ctx
		return nil
	}))
	if err := h.ProcessTask(context.Background(), asynq.NewTaskWithHeaders("test:job", stored.Payload, stored.Headers)); err != nil {
		t.Fatal(err)
	}
	sc := trace.SpanContextFromContext(jobCtx)
	if sc.TraceID() != producer.SpanContext().TraceID() {
		t.Errorf("job trace = %s, want the producer's %s", sc.TraceID(), producer.SpanContext().TraceID())
	}
	consumer := spanByName(t, server.SpanContext().TraceID(), "test:job process")
	if consumer.Parent().SpanID() != producer.SpanContext().SpanID() {
		t.Errorf("job span parent = %s, want the producer span %s", consumer.Parent().SpanID(), producer.SpanContext().SpanID())
	}
}

// TestLogCarriesTrace: a line logged inside a span names its trace.
func TestLogCarriesTrace(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := logx.New(&buf, "test", "info")
	ctx, span := tracing.Start(context.Background(), "request", trace.SpanKindServer)
	log.InfoContext(ctx, "hello")
	span.End()
	log.Info("untraced")
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	var got []map[string]any
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "time")
		got = append(got, m)
	}
	want := []map[string]any{
		{"level": "INFO", "msg": "hello", "service": "test", "version": buildinfo.Version(),
			"trace_id": span.SpanContext().TraceID().String(), "span_id": span.SpanContext().SpanID().String()},
		{"level": "INFO", "msg": "untraced", "service": "test", "version": buildinfo.Version()},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log lines (-want +got):\n%s", diff)
	}
}

// TestSamplerSettings: the standard OTEL_TRACES_SAMPLER settings this platform
// honours, and the ones it refuses at start-up.
func TestSamplerSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		env   map[string]string
		ratio float64
		err   string
	}{
		{"default", nil, 1, ""},
		{"always on", map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_always_on"}, 1, ""},
		{"ratio", map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"}, 0.1, ""},
		{"ratio without arg", map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio"}, 1, ""},
		{"ratio zero", map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}, 0,
			"OTEL_TRACES_SAMPLER_ARG: must be a ratio in (0, 1]"},
		{"ratio not a number", map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "ten"}, 0,
			"OTEL_TRACES_SAMPLER_ARG: must be a ratio in (0, 1]"},
		{"endpoint not http", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "grpc://collector:4317"}, 0,
			"OTEL_EXPORTER_OTLP_ENDPOINT: must be an http or https URL"},
		{"traces endpoint named as itself", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "collector:4318"}, 0,
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: must be an http or https URL"},
		{"unknown sampler", map[string]string{"OTEL_TRACES_SAMPLER": "jaeger_remote"}, 0,
			"OTEL_TRACES_SAMPLER: must be parentbased_always_on or parentbased_traceidratio (set OTEL_EXPORTER_OTLP_ENDPOINT empty to turn tracing off)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if c, ok := load(t, tt.env, tt.err); ok && c.Ratio != tt.ratio {
				t.Errorf("ratio %v, want %v", c.Ratio, tt.ratio)
			}
		})
	}
}

// load reads the tracing configuration of env and checks its error: with
// wantErr set, that there is one containing it (ok is then false, and the
// configuration is not to be looked at); without, that there is none.
func load(t *testing.T, env map[string]string, wantErr string) (c tracing.Config, ok bool) {
	t.Helper()
	err := config.ParseMap(&c, env)
	switch {
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Errorf("error %v, want it to contain %q", err, wantErr)
	case wantErr == "" && err != nil:
		t.Errorf("error %v, want none", err)
	}
	return c, wantErr == "" && err == nil
}

// TestExporterSettings: OTEL_TRACES_EXPORTER is otlp (the default) or none.
func TestExporterSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value, want, err string
	}{
		{"", "otlp", ""},
		{"otlp", "otlp", ""},
		{"none", "none", ""},
		{"console", "", "OTEL_TRACES_EXPORTER: must be otlp or none"},
	}
	for _, tt := range tests {
		env := map[string]string{}
		if tt.value != "" {
			env["OTEL_TRACES_EXPORTER"] = tt.value
		}
		if c, ok := load(t, env, tt.err); ok && c.Exporter != tt.want {
			t.Errorf("%q: exporter %q, want %q", tt.value, c.Exporter, tt.want)
		}
	}
}

// TestSetupExporterNone: with OTEL_TRACES_EXPORTER=none and no endpoint,
// tracing is on and spans are recorded (their ids reach the logs); with
// neither it stays off. Not parallel: it installs the process's provider.
func TestSetupExporterNone(t *testing.T) {
	t.Cleanup(func() {
		tracing.Install(tracing.NewProvider(resource.Empty(), rec, 1))
		otel.SetErrorHandler(&handled) // Setup routes errors to the log
	})
	for _, tt := range []struct {
		exporter string
		active   bool
	}{{"none", true}, {"otlp", false}} {
		tracing.Install(nil)
		shutdown, err := tracing.Setup(context.Background(), "test", tracing.Config{Exporter: tt.exporter, Ratio: 1, Batching: tracing.DefaultBatching})
		if err != nil {
			t.Fatal(err)
		}
		_, span := tracing.Start(context.Background(), "request", trace.SpanKindServer)
		span.End()
		if tracing.Active() != tt.active || span.SpanContext().IsSampled() != tt.active {
			t.Errorf("exporter %s: active %v, span sampled %v; want %v", tt.exporter, tracing.Active(), span.SpanContext().IsSampled(), tt.active)
		}
		if err := shutdown(context.Background()); err != nil {
			t.Errorf("exporter %s: shutdown: %v", tt.exporter, err)
		}
	}
}

// TestRatioSampler: with a ratio, about that share of entry spans start a
// recorded trace, and a child always follows its parent's decision, so a
// trace is kept or dropped whole.
func TestRatioSampler(t *testing.T) {
	t.Parallel()
	tp := tracing.NewProvider(resource.Empty(), tracetest.NewSpanRecorder(), 0.25)
	tr := tp.Tracer("test")
	const n = 4000
	sampled := 0
	for range n {
		ctx, server := tr.Start(context.Background(), "server", trace.WithSpanKind(trace.SpanKindServer))
		_, child := tr.Start(ctx, "query", trace.WithSpanKind(trace.SpanKindClient))
		if child.IsRecording() != server.IsRecording() {
			t.Fatalf("child recording %v under a parent recording %v", child.IsRecording(), server.IsRecording())
		}
		if server.IsRecording() {
			sampled++
		}
		child.End()
		server.End()
	}
	if got := float64(sampled) / n; got < 0.2 || got > 0.3 {
		t.Fatalf("sampled %.3f of entry spans, want about 0.25", got)
	}
}

// TestSetupLogsTracingErrors: once Setup has run, OpenTelemetry's errors
// (a failed export, dropped spans) are warnings in the process's log. Not
// parallel: it replaces the default logger and the error handler.
func TestSetupLogsTracingErrors(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&buf, nil)))
	t.Cleanup(func() {
		slog.SetDefault(prev)
		otel.SetErrorHandler(&handled)
	})
	if _, err := tracing.Setup(context.Background(), "test", tracing.Config{Exporter: "otlp", Ratio: 1, Batching: tracing.DefaultBatching}); err != nil {
		t.Fatal(err)
	}
	otel.Handle(errors.New("tracing: 3 spans dropped"))
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("log %q: %v", buf.String(), err)
	}
	delete(got, "time")
	want := map[string]any{"level": "WARN", "msg": "tracing", "error": "tracing: 3 spans dropped"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log line (-want +got):\n%s", diff)
	}
}
