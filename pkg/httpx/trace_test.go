package httpx

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/opencrm/crm/pkg/tracing"
)

// TestServerSpans: with tracing on, a request gets a server span named by
// its route pattern that continues the caller's trace, carries the HTTP
// attributes and marks a 5xx as an error, and the handler's context
// carries it; probes are not traced; with tracing off the
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
	mux.HandleFunc("POST /contacts", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	ops, err := NewOps()
	if err != nil {
		t.Fatal(err)
	}
	do := func(h http.Handler, method, path string) {
		req := httptest.NewRequest(method, path, nil)
		req.Header.Set("Traceparent", "00-"+tid+"-"+caller+"-01")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	get := func(h http.Handler, path string) { do(h, "GET", path) }
	get(ops.Handler(mux), "/contacts/7")
	get(ops.Handler(mux), "/healthz")
	do(ops.Handler(mux), "POST", "/contacts")

	type got struct {
		Name, Trace, Parent string
		Kind                trace.SpanKind
		Attrs               map[string]string
		Status              codes.Code
	}
	var spans []got
	for _, s := range rec.Ended() {
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		spans = append(spans, got{s.Name(), s.SpanContext().TraceID().String(), s.Parent().SpanID().String(),
			s.SpanKind(), attrs, s.Status().Code})
	}
	attrs := func(method, path, route, status string) map[string]string {
		return map[string]string{"http.request.method": method, "url.path": path, "url.scheme": "http",
			"http.route": route, "http.response.status_code": status}
	}
	want := []got{
		{"GET /contacts/{id}", tid, caller, trace.SpanKindServer, attrs("GET", "/contacts/7", "GET /contacts/{id}", "200"), codes.Unset},
		{"POST /contacts", tid, caller, trace.SpanKindServer, attrs("POST", "/contacts", "POST /contacts", "503"), codes.Error},
	}
	if diff := cmp.Diff(want, spans); diff != "" {
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
