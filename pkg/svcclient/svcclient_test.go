package svcclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/svcclient"
	"github.com/opencrm/crm/pkg/tracing"
)

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestErrorCategories(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(auth.InternalHeader) != "secret" || r.Header.Get("Idempotency-Key") != "k1" ||
			r.Header.Get("Traceparent") != traceparent || r.Header.Get("X-Request-Id") != "req-9" {
			w.WriteHeader(401)
			return
		}
		_, _ = w.Write([]byte(`{"data":{"id":3}}`))
	})
	mux.HandleFunc("/invalid", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(422)
		_, _ = w.Write([]byte(`{"code":"validation_failed","errors":[{"field":"stage_id","message":"unknown"}]}`))
	})
	mux.HandleFunc("/boom", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { time.Sleep(300 * time.Millisecond) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	down := httptest.NewServer(mux)
	down.Close()

	c := svcclient.New("deals", srv.URL, "secret")
	c.Timeout = 100 * time.Millisecond
	var out struct {
		Data struct{ ID int } `json:"data"`
	}
	// The request id and trace context of the incoming request travel on.
	var ctx context.Context
	in := httptest.NewRequest("GET", "/", nil)
	in.Header.Set("X-Request-Id", "req-9")
	httpx.RequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ctx = r.Context() })).ServeHTTP(httptest.NewRecorder(), in)
	ctx = tracing.Extract(ctx, tracing.Carrier{"traceparent": traceparent})
	if err := c.Do(ctx, "POST", "/ok", "k1", map[string]int{"a": 1}, &out); err != nil || out.Data.ID != 3 {
		t.Fatalf("ok: %v %+v", err, out)
	}
	tests := []struct {
		client *svcclient.Client
		path   string
		status int
		code   string
	}{
		{c, "/invalid", 422, "validation_failed"},
		{c, "/missing", 404, "upstream_error"},
		{c, "/boom", 502, "upstream_unavailable"},
		{c, "/slow", 504, "upstream_timeout"},
		{svcclient.New("deals", down.URL, "secret"), "/ok", 503, "upstream_unavailable"},
	}
	for _, tt := range tests {
		err := tt.client.Do(context.Background(), "GET", tt.path, "", nil, nil)
		p := problem.From(err)
		if p.Status != tt.status || p.Code != tt.code {
			t.Errorf("%s: got %d %s (%v), want %d %s", tt.path, p.Status, p.Code, err, tt.status, tt.code)
		}
	}
}

func TestExists(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/records/4":
			httpx.OK(w, map[string]any{"id": 4})
		case "/records/5":
			problem.Write(w, r, problem.NotFound("deal"))
		default:
			problem.Write(w, r, problem.Unavailable("down", 5))
		}
	}))
	defer srv.Close()
	c := svcclient.New("deals", srv.URL, "secret")
	tests := []struct {
		path   string
		want   bool
		status int
	}{
		{"/records/4", true, 0},
		{"/records/5", false, 0},
		{"/records/6", false, 503},
	}
	for _, tt := range tests {
		got, err := c.Exists(context.Background(), tt.path)
		status := 0
		if err != nil {
			status = problem.From(err).Status
		}
		if got != tt.want || status != tt.status {
			t.Errorf("%s: %v, status %d; want %v, %d", tt.path, got, status, tt.want, tt.status)
		}
	}
}

// TestTransportErrorKeepsTheQueryOut: a failed call's error is logged by
// the caller, and must not carry the URL's query (an email, a name).
func TestTransportErrorKeepsTheQueryOut(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	c := svcclient.New("contacts", srv.URL, "secret")
	err := c.Do(context.Background(), http.MethodGet, "/records/match?email=alice.private%40example.com", "", nil, nil)
	if err == nil || problem.From(err).Status != 503 {
		t.Fatalf("err = %v, want a 503", err)
	}
	if strings.Contains(err.Error(), "alice") || strings.Contains(err.Error(), "match?") {
		t.Errorf("error text carries the URL: %v", err)
	}
}

// TestTracedCalls: with tracing on, a call in a recorded trace gets a
// client span whose context the callee receives; a call in a trace that is
// not recorded passes the caller's context on without a span; a call in no
// trace sends a context of its own, not sampled, so the callee starts no
// trace for it. Not parallel: it installs the process's tracer provider.
func TestTracedCalls(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tracing.Install(tracing.NewProvider(resource.Empty(), rec, 1))
	t.Cleanup(func() { tracing.Install(nil) })
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Traceparent")
	}))
	t.Cleanup(srv.Close)
	c := svcclient.New("leads", srv.URL, "secret")

	ctx, server := tracing.Start(context.Background(), "request", trace.SpanKindServer)
	unsampled := tracing.Extract(context.Background(), tracing.Carrier{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"})
	tests := []struct {
		name  string
		ctx   context.Context
		spans int    // client spans recorded
		want  string // the traceparent the callee gets; "" where it is the client span's
		fresh bool   // a trace id of its own, not sampled
	}{
		{"recorded", ctx, 1, "", false},
		{"not recorded", unsampled, 0, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", false},
		{"no trace", context.Background(), 0, "", true},
	}
	for _, tt := range tests {
		before := len(rec.Ended())
		if err := c.Do(tt.ctx, "POST", "/internal/leads", "", nil, nil); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		tp := <-got
		var client []sdktrace.ReadOnlySpan
		for _, s := range rec.Ended()[before:] {
			if s.SpanKind() == trace.SpanKindClient {
				client = append(client, s)
			}
		}
		if len(client) != tt.spans {
			t.Errorf("%s: %d client spans recorded, want %d", tt.name, len(client), tt.spans)
			continue
		}
		switch {
		case tt.spans == 1:
			sc := client[0].SpanContext()
			if want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"; tp != want ||
				client[0].Parent().SpanID() != server.SpanContext().SpanID() || client[0].Name() != "POST leads" {
				t.Errorf("%s: callee got %q, span %q under %s; want %q under the request span %s", tt.name, tp,
					client[0].Name(), client[0].Parent().SpanID(), want, server.SpanContext().SpanID())
			}
		case tt.fresh:
			if len(tp) != 55 || !strings.HasSuffix(tp, "-00") || strings.Contains(tp, "4bf92f3577b34da6a3ce929d0e0e4736") {
				t.Errorf("%s: callee got %q, want a new trace not sampled", tt.name, tp)
			}
		case tp != tt.want:
			t.Errorf("%s: callee got %q, want %q", tt.name, tp, tt.want)
		}
	}
	server.End()
}

// TestStatusErrorKinds: a core reads another context's refusal by its kind,
// knowing no status, and the edge still renders the same problem.
func TestStatusErrorKinds(t *testing.T) {
	t.Parallel()
	c := svcclient.New("contacts", "http://contacts.invalid", "0123456789abcdef")
	cases := []struct {
		status int
		body   string
		kind   fault.Kind
		code   string
	}{
		{404, `{"code":"not_found","detail":"contact not found"}`, fault.KindNotFound, "not_found"},
		{409, `{"code":"duplicate_email","detail":"taken"}`, fault.KindConflict, "duplicate_email"},
		{422, `{"code":"validation_failed","errors":[{"field":"email","message":"bad"}]}`, fault.KindInvalid, "validation_failed"},
		{400, `{}`, fault.KindMalformed, "upstream_error"},
		{503, ``, fault.KindUnavailable, "upstream_unavailable"},
		{504, ``, fault.KindTimeout, "upstream_timeout"},
		{500, ``, fault.KindBadUpstream, "upstream_unavailable"},
	}
	for _, tc := range cases {
		err := c.StatusError(tc.status, []byte(tc.body))
		if got := fault.KindOf(err); got != tc.kind {
			t.Errorf("%d: kind %v, want %v", tc.status, got, tc.kind)
		}
		p := problem.From(err)
		want := tc.status
		if tc.status == 500 {
			want = 502
		}
		if p.Status != want || p.Code != tc.code {
			t.Errorf("%d: rendered %d %s, want %d %s", tc.status, p.Status, p.Code, want, tc.code)
		}
	}
}
