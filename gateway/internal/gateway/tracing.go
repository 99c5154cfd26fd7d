package gateway

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/opencrm/crm/pkg/tracing"
)

// startSpan starts the request's server span, continuing the W3C trace
// context the client sent, in ctx. It is a few lines rather than
// otelfiber: that middleware names spans by fiber's route, which here is
// one catch-all for the whole API; the gateway knows the templated route
// only once its own table and the OpenAPI operations have matched (see
// endSpan). Probes are not traced.
func startSpan(ctx context.Context, c *fiber.Ctx) (context.Context, trace.Span) {
	switch string(c.Request().URI().Path()) {
	case "/healthz", "/readyz":
		return ctx, trace.SpanFromContext(ctx) // the no-op span
	}
	if !tracing.Active() {
		// Off: only a client's context is kept, for the logs.
		if len(c.Request().Header.Peek("Traceparent")) > 0 {
			ctx = tracing.Propagator.Extract(ctx, headerCarrier{&c.Request().Header})
		}
		return ctx, trace.SpanFromContext(ctx)
	}
	ctx = tracing.Propagator.Extract(ctx, headerCarrier{&c.Request().Header})
	return tracing.Start(ctx, c.Method(), trace.SpanKindServer)
}

// endSpan names the span by its route and records the status.
func endSpan(span trace.Span, method, route string, status int) {
	if !span.IsRecording() {
		return
	}
	span.SetName(method + " " + route)
	span.SetAttributes(semconv.HTTPRequestMethodKey.String(method), semconv.HTTPRoute(route),
		semconv.HTTPResponseStatusCode(status), attribute.String("crm.component", "gateway"))
	if status >= 500 {
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// headerCarrier reads a fasthttp request's headers for the propagator.
type headerCarrier struct{ h *fasthttp.RequestHeader }

func (c headerCarrier) Get(key string) string { return string(c.h.Peek(key)) }

func (c headerCarrier) Set(key, value string) { c.h.Set(key, value) }

func (c headerCarrier) Keys() []string {
	var keys []string
	c.h.VisitAll(func(k, _ []byte) { keys = append(keys, string(k)) })
	return keys
}
