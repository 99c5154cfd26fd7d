package httpx

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/opencrm/crm/pkg/tracing"
)

// TestServerSpans: with tracing on, a request gets a server span named by
// its route pattern that continues the caller's trace, and the handler's
// context carries it; probes are not traced; with tracing off the
// caller's context still reaches the handler. Not parallel: it installs
// the process's tracer provider.
func TestServerSpans(t *testing.T) {
	const tid, caller = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	rec := tracetest.NewSpanRecorder()
	tracing.Install(tracing.NewProvider(resource.Empty(), rec, 1))
	t.Cleanup(func() { tracing.Install(nil) })

	var seen trace.SpanContext
	mux := http.NewServeMux()
	mux.HandleFunc("GET /contacts/{id}", func(w http.ResponseWriter, r *http.Request) {
		seen = trace.SpanContextFromContext(r.Context())
	})
	ops, err := NewOps()
	if err != nil {
		t.Fatal(err)
	}
	get := func(h http.Handler, path string) {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Traceparent", "00-"+tid+"-"+caller+"-01")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	get(ops.Handler(mux), "/contacts/7")
	get(ops.Handler(mux), "/healthz")

	type got struct{ Name, Trace, Parent string }
	var spans []got
	for _, s := range rec.Ended() {
		spans = append(spans, got{s.Name(), s.SpanContext().TraceID().String(), s.Parent().SpanID().String()})
	}
	if diff := cmp.Diff([]got{{"GET /contacts/{id}", tid, caller}}, spans); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	if seen.TraceID().String() != tid || seen.SpanID() != rec.Ended()[0].SpanContext().SpanID() {
		t.Errorf("handler context = %v, want the server span", seen)
	}

	tracing.Install(nil)
	seen = trace.SpanContext{}
	get(ops.Handler(mux), "/contacts/7")
	if seen.TraceID().String() != tid || seen.SpanID().String() != caller {
		t.Errorf("tracing off: handler context = %v, want the caller's", seen)
	}
}
