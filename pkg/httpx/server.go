package httpx

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/opencrm/crm/pkg/problem"
)

// Check reports whether one dependency is ready (database, Redis, ...).
type Check struct {
	Name string
	Fn   func(context.Context) error
}

// Ops is what every process exposes besides its API: liveness, readiness
// and Prometheus metrics, plus the shared middleware stack.
type Ops struct {
	Registry *prometheus.Registry
	Metrics  *Metrics
	checks   []Check
}

// NewOps creates a registry with Go and process collectors and HTTP metrics.
func NewOps(checks ...Check) (*Ops, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	m, err := NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Ops{Registry: reg, Metrics: m, checks: checks}, nil
}

// Handler mounts /healthz, /readyz and /metrics beside api and wraps
// everything in request id, recovery and metrics middleware.
func (o *Ops) Handler(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		JSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", o.ready)
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{}))
	mux.Handle("/", problemMethodNotAllowed(api))
	return Chain(mux, RequestID, o.Metrics.Observe, Recover)
}

// problemMethodNotAllowed turns ServeMux's plain-text 405 (a known path with
// another method) into problem+json, keeping its Allow header.
func problemMethodNotAllowed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&methodWriter{ResponseWriter: w, r: r}, r)
	})
}

type methodWriter struct {
	http.ResponseWriter
	r        *http.Request
	replaced bool
}

func (m *methodWriter) WriteHeader(code int) {
	if code == http.StatusMethodNotAllowed && !strings.HasPrefix(m.Header().Get("Content-Type"), problem.ContentType) {
		m.replaced = true
		m.Header().Del("Content-Length")
		e := &problem.Error{Status: code, Code: "method_not_allowed", Title: http.StatusText(code),
			Detail: "this path does not support " + m.r.Method}
		problem.Write(m.ResponseWriter, m.r, e)
		return
	}
	m.ResponseWriter.WriteHeader(code)
}

func (m *methodWriter) Write(b []byte) (int, error) {
	if m.replaced {
		return len(b), nil
	}
	return m.ResponseWriter.Write(b)
}

// Unwrap exposes the underlying writer to http.ResponseController.
func (m *methodWriter) Unwrap() http.ResponseWriter { return m.ResponseWriter }

// Flush passes streaming flushes through.
func (m *methodWriter) Flush() {
	if f, ok := m.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (o *Ops) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	status := map[string]string{}
	ok := true
	for _, c := range o.checks {
		if err := c.Fn(ctx); err != nil {
			ok = false
			status[c.Name] = "unavailable"
			slog.WarnContext(ctx, "readiness check failed", "check", c.Name, "error", err.Error())
			continue
		}
		status[c.Name] = "ok"
	}
	if !ok {
		JSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "checks": status})
		return
	}
	JSON(w, http.StatusOK, map[string]any{"status": "ok", "checks": status})
}

// NotFoundHandler answers every unmatched route with problem+json.
func NotFoundHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, r, problem.NotFound("route"))
	})
}

// Serve runs h on addr until ctx is cancelled, then drains in-flight
// requests for up to 15 s. The listener is returned through ready (if not
// nil) so tests can bind ":0" and learn the port.
func Serve(ctx context.Context, addr string, h http.Handler, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
