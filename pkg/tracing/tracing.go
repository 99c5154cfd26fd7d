// Package tracing sets up OpenTelemetry for a process and carries the W3C
// trace context across the hops HTTP instrumentation cannot see: an asynq
// task (in its headers) and an outbox event (in the event).
//
// Without OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_TRACES_EXPORTER=none) nothing
// is recorded or exported: the global tracer provider stays OpenTelemetry's
// no-op, so instrumented code costs a few allocations per span at most, and
// only the propagator runs (a traceparent a client sent is still passed on,
// and logged).
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/opencrm/crm/pkg/buildinfo"
)

// Name is the instrumentation scope of the spans this package and the
// platform's middleware start.
const Name = "github.com/opencrm/crm/pkg/tracing"

// Config is the tracing part of a process's configuration, read from the
// standard OTEL_* variables by config.Parse and completed by Validate.
type Config struct {
	// Exporter is OTEL_TRACES_EXPORTER. "otlp", the default, exports to
	// Endpoint and leaves tracing off without one. "none" records every
	// span and drops it in the process, exporting nothing: every request
	// has a trace id in the logs without a collector, and the tracing
	// benchmark tells what the instrumentation costs apart from the export.
	Exporter string `env:"OTEL_TRACES_EXPORTER" envDefault:"otlp"`
	// Endpoint is OTEL_EXPORTER_OTLP_ENDPOINT (or the traces-only
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT): the OTLP/HTTP collector. Empty
	// turns tracing off. The exporter and batch processor read the rest of
	// the standard OTEL_* variables themselves (headers, timeout,
	// OTEL_BSP_SCHEDULE_DELAY...).
	Endpoint       string `env:"OTEL_EXPORTER_OTLP_ENDPOINT"`
	TracesEndpoint string `env:"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"`
	// Sampler and SamplerArg are OTEL_TRACES_SAMPLER and its argument.
	// The argument is text, read by Validate only for a sampler that takes
	// one, so another sampler ignores it as the specification says.
	Sampler    string `env:"OTEL_TRACES_SAMPLER" envDefault:"parentbased_always_on"`
	SamplerArg string `env:"OTEL_TRACES_SAMPLER_ARG" envDefault:"1"`
	// Ratio is the share of traces recorded where work enters the system
	// (1: every one), set by Validate from the sampler; a trace is kept or
	// dropped whole, since every hop after the first follows its parent's
	// decision.
	Ratio float64
	// Batching groups spans for the exporter (OTEL_BSP_*).
	Batching Batching
}

// Validate checks the exporter and sampler and settles Endpoint and Ratio;
// a malformed endpoint or sampler fails start-up with the rest of the
// configuration.
func (c *Config) Validate() error {
	var errs []error
	if c.Exporter != "otlp" && c.Exporter != "none" {
		errs = append(errs, errors.New("OTEL_TRACES_EXPORTER: must be otlp or none"))
	}
	c.Ratio = 1
	switch c.Sampler {
	case "parentbased_always_on":
	case "parentbased_traceidratio":
		r, err := strconv.ParseFloat(c.SamplerArg, 64)
		if err != nil || !(r > 0 && r <= 1) {
			errs = append(errs, errors.New("OTEL_TRACES_SAMPLER_ARG: must be a ratio in (0, 1]"))
		}
		c.Ratio = r
	default:
		errs = append(errs, errors.New("OTEL_TRACES_SAMPLER: must be parentbased_always_on or parentbased_traceidratio (set OTEL_EXPORTER_OTLP_ENDPOINT empty to turn tracing off)"))
	}
	name := "OTEL_EXPORTER_OTLP_ENDPOINT"
	if c.TracesEndpoint != "" {
		c.Endpoint, name = c.TracesEndpoint, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, errors.New(name+": must be an http or https URL (the exporter speaks OTLP over HTTP)"))
		}
	}
	return errors.Join(errs...)
}

// Propagator reads and writes W3C traceparent, tracestate and baggage.
// Instrumentation is given it explicitly, so propagation does not depend on
// which process called Setup (tests, tools).
var Propagator propagation.TextMapPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// installed is the provider Install set last with its tracer of this
// package's scope (nil: tracing is off). otelhttp, and Start, would
// otherwise look the tracer up in the provider (a lock and a map) on every
// request.
var installed atomic.Pointer[installation]

type installation struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

// Provider is the tracer provider Install set, or OpenTelemetry's global
// one: the instrumentation built after Setup is given it once.
func Provider() trace.TracerProvider {
	if in := installed.Load(); in != nil {
		return in.provider
	}
	return otel.GetTracerProvider()
}

// Active reports whether this process records spans (and exports them,
// unless OTEL_TRACES_EXPORTER=none). The wrappers that cost allocations
// per call even when nothing records (the server span, otelhttp's
// transport, the pgx and Redis hooks) are installed only then, by constructors running after Setup; with tracing
// off the W3C context is still passed on by hand (Inject into headers),
// so a client's traceparent reaches every log line.
func Active() bool { return installed.Load() != nil }

// Setup installs the W3C propagator and, when c.Endpoint is set, a tracer
// provider that batches spans to the OTLP/HTTP exporter (with c.Exporter
// "none", to no exporter at all). shutdown flushes the spans still
// buffered; call it once the server has drained.
func Setup(ctx context.Context, service string, c Config) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(Propagator)
	// Failed exports and dropped spans reach the process's own log, not
	// OpenTelemetry's default logger (plain text on standard error).
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { slog.Warn("tracing", "error", err.Error()) }))
	var exp sdktrace.SpanExporter
	switch {
	case c.Exporter == "none":
		exp = discard{}
	case c.Endpoint == "":
		return func(context.Context) error { return nil }, nil
	default:
		if exp, err = otlptracehttp.New(ctx); err != nil {
			return nil, fmt.Errorf("tracing: exporter: %w", err)
		}
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service), semconv.ServiceVersion(buildinfo.Version())))
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	sp, err := NewBatcher(exp, c.Batching)
	if err != nil {
		return nil, err
	}
	tp := NewProvider(res, sp, c.Ratio)
	Install(tp)
	return tp.Shutdown, nil
}

// discard is the exporter of OTEL_TRACES_EXPORTER=none.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// Install makes tp the global tracer provider and tracing Active; nil
// restores the no-op provider and turns it off. Setup calls it; benchmarks
// and tests with their own exporter do too, before building what they
// measure.
func Install(tp *sdktrace.TracerProvider) {
	if tp == nil {
		otel.SetTracerProvider(noop.NewTracerProvider())
		installed.Store(nil)
		return
	}
	otel.SetTracerProvider(tp)
	installed.Store(&installation{provider: tp, tracer: tp.Tracer(Name)})
}

// NewProvider is the tracer provider Setup installs, with sp as its span
// processor; benchmarks and tests give it their own processor.
//
// It samples ratio of the traces that start where work enters the system
// (a server request, a queue or event consumer; 1: all of them) and
// follows the parent's decision inside them. A span with no parent of any
// other kind — the outbox relay's polling query, asynq's Redis
// housekeeping, a health probe's ping — is dropped: those run every second
// in every replica and would bury the traces of real requests.
func NewProvider(res *resource.Resource, sp sdktrace.SpanProcessor, ratio float64) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(entrySampler{ratio: sdktrace.TraceIDRatioBased(ratio)})),
		sdktrace.WithSpanProcessor(sp),
	)
}

// entrySampler samples root spans of kind server or consumer only, by
// their trace id's ratio.
type entrySampler struct{ ratio sdktrace.Sampler }

func (s entrySampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if p.Kind == trace.SpanKindServer || p.Kind == trace.SpanKindConsumer {
		return s.ratio.ShouldSample(p)
	}
	return sdktrace.SamplingResult{Decision: sdktrace.Drop, Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
}

func (s entrySampler) Description() string { return "EntrySampler{" + s.ratio.Description() + "}" }

// Carrier is the W3C trace context of a span in a form that travels in
// JSON: {"traceparent": "00-…", "tracestate": "…"}.
type Carrier map[string]string

// Inject returns the trace context of ctx, or nil when ctx carries none.
func Inject(ctx context.Context) Carrier {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := Carrier{}
	Propagator.Inject(ctx, propagation.MapCarrier(c))
	return c
}

// Extract returns ctx continuing the trace of c (unchanged when c is empty).
func Extract(ctx context.Context, c Carrier) context.Context {
	if len(c) == 0 {
		return ctx
	}
	return Propagator.Extract(ctx, propagation.MapCarrier(c))
}

// Start starts a span of kind k with the package's tracer.
func Start(ctx context.Context, name string, k trace.SpanKind) (context.Context, trace.Span) {
	if in := installed.Load(); in != nil {
		return in.tracer.Start(ctx, name, trace.WithSpanKind(k))
	}
	return otel.Tracer(Name).Start(ctx, name, trace.WithSpanKind(k))
}

// End records err on span (if any) and ends it.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
