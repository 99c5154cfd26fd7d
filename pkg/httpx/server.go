package httpx

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/opencrm/crm/pkg/buildinfo"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/tracing"
)

// Check reports whether one dependency is ready (database, Redis, ...).
type Check struct {
	Name string
	Fn   func(context.Context) error
	// Optional checks are reported by /readyz and the dependency_up gauge
	// but do not make the process unready: it answers requests without
	// that dependency (degraded), and every replica shares it, so taking
	// replicas out of rotation would turn a partial outage into a total one.
	Optional bool
}

// Ops is what every process exposes besides its API: liveness, readiness
// and Prometheus metrics, plus the shared middleware stack.
type Ops struct {
	Registry *prometheus.Registry
	Metrics  *Metrics
	checks   []Check
	up       *prometheus.GaugeVec
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
	up := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dependency_up",
		Help: "1 if the readiness check of a dependency passed at the latest /readyz, else 0 (optional ones do not fail readiness).",
	}, []string{"dependency"})
	if err := reg.Register(up); err != nil {
		return nil, err
	}
	if err := reg.Register(buildinfo.Metric()); err != nil {
		return nil, err
	}
	return &Ops{Registry: reg, Metrics: m, checks: checks, up: up}, nil
}

// Handler mounts /healthz, /readyz and /metrics beside api and wraps
// everything in tracing (when Active, a server span continuing the caller's
// W3C trace context; the ops endpoints are not traced), request id,
// recovery and metrics middleware.
func (o *Ops) Handler(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		JSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", o.ready)
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.Registry, promhttp.HandlerOpts{}))
	mux.Handle("/", problemMethodNotAllowed(api))
	h := Chain(mux, RequestID, o.Metrics.Observe, Recover)
	if !tracing.Active() {
		return extractTrace(h)
	}
	return traceRequests(h)
}

// traceRequests gives each request a server span continuing the caller's
// W3C trace context; Observe names it by route and records the status once
// the mux has matched. The ops endpoints are not traced.
//
// It is a few lines rather than otelhttp's handler, which on every request,
// recorded or not, wraps the body and the writer again (Observe already
// does), builds the attribute sets of its HTTP metrics for a meter that
// records nothing here (the services export Prometheus metrics
// themselves), and puts a dozen attributes on the span. In a profile of
// the tracing benchmark it was the largest item of a service's tracing cost.
func traceRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/readyz", "/metrics":
			next.ServeHTTP(w, r)
			return
		}
		ctx, span := tracing.Start(tracing.Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header)),
			r.Method, trace.SpanKindServer)
		defer span.End()
		if span.IsRecording() {
			scheme := "http"
			if r.TLS != nil {
				scheme = "https"
			}
			span.SetAttributes(semconv.HTTPRequestMethodKey.String(r.Method), semconv.URLPath(r.URL.Path),
				semconv.URLScheme(scheme))
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// extractTrace keeps a caller's W3C trace context in the request context
// when tracing is off, so logs and onward calls carry it.
func extractTrace(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Traceparent") != "" {
			r = r.WithContext(tracing.Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
		}
		next.ServeHTTP(w, r)
	})
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

// ready answers 200 when every required check passes, 503 otherwise, and
// 503 as soon as the server started shutting down (see Server). The body
// lists every check, optional ones included.
func (o *Ops) ready(w http.ResponseWriter, r *http.Request) {
	if isDraining(r.Context()) {
		JSON(w, http.StatusServiceUnavailable, map[string]any{"status": "shutting_down"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	status := map[string]string{}
	ok := true
	for _, c := range o.checks {
		if err := c.Fn(ctx); err != nil {
			if !c.Optional {
				ok = false
			}
			status[c.Name] = "unavailable"
			o.up.WithLabelValues(c.Name).Set(0)
			slog.WarnContext(ctx, "readiness check failed", "check", c.Name, "optional", c.Optional, "error", err.Error())
			continue
		}
		status[c.Name] = "ok"
		o.up.WithLabelValues(c.Name).Set(1)
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

// Shutdown is how a server stops (CRM_SHUTDOWN_DELAY, CRM_DRAIN_TIMEOUT).
type Shutdown struct {
	// Delay is how long, once told to stop, the server keeps serving with
	// /readyz answering 503 and keep-alive off, before it closes the
	// listener: long enough for load balancers to see /readyz fail
	// (0 turns it off).
	Delay time.Duration `env:"CRM_SHUTDOWN_DELAY" envDefault:"5s" min:"0s"`
	// Drain bounds the wait for requests in flight once the listener is
	// closed; whatever still runs then is cut. It outlasts the slowest
	// legitimate request (a contract PDF waits up to 30 s for render, the
	// gateway up to 35 s for a service).
	Drain time.Duration `env:"CRM_DRAIN_TIMEOUT" envDefault:"40s"`
}

// Validate refuses a drain of zero, which would cut every request in
// flight (a negative duration does not parse).
func (s *Shutdown) Validate() error {
	if s.Drain <= 0 {
		return errors.New("CRM_DRAIN_TIMEOUT: must be greater than zero")
	}
	return nil
}

// Serve runs h on addr until ctx is cancelled, then shuts down as Server
// does with sd (read once with the process configuration by config.Parse).
// The listener is returned through ready (if not nil) so tests can bind
// ":0" and learn the port.
func Serve(ctx context.Context, addr string, h http.Handler, sd Shutdown, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(ln.Addr())
	}
	return (&Server{Handler: h, Shutdown: sd}).Serve(ctx, ln)
}

// Server serves a handler with the platform's timeouts and stops in two
// steps once its context ends: for Shutdown.Delay it keeps serving while
// /readyz (Ops) answers 503 and responses close their connections, so load
// balancers and keep-alive clients move to other replicas; then it closes
// the listener and lets requests in flight finish for up to
// Shutdown.Drain. A drain cut short is a warning, not an error: the
// process is stopping either way.
type Server struct {
	Handler  http.Handler
	Shutdown Shutdown
	// Log receives the shutdown messages (nil: slog.Default()).
	Log *slog.Logger

	// after and onShutdown let tests end the delay and see the listener
	// close; nil in production.
	after      func(time.Duration) <-chan time.Time
	onShutdown func()
}

type drainingKey struct{}

// isDraining reports whether the Server serving the request is stopping.
func isDraining(ctx context.Context) bool {
	d, _ := ctx.Value(drainingKey{}).(*atomic.Bool)
	return d != nil && d.Load()
}

// Serve serves on ln until ctx ends, then stops as described on Server.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	log := s.Log
	if log == nil {
		log = slog.Default()
	}
	draining := new(atomic.Bool)
	srv := &http.Server{
		Handler:           s.Handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		BaseContext: func(net.Listener) context.Context {
			return context.WithValue(context.WithoutCancel(ctx), drainingKey{}, draining)
		},
	}
	if s.onShutdown != nil {
		srv.RegisterOnShutdown(s.onShutdown)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}

	draining.Store(true)
	srv.SetKeepAlivesEnabled(false)
	if d := s.Shutdown.Delay; d > 0 {
		after := s.after
		if after == nil {
			after = time.After
		}
		log.Info("shutting down: not ready, still serving", "delay", d.String())
		select {
		case err := <-errc:
			return err
		case <-after(d):
		}
	}

	log.Info("shutting down: draining requests in flight", "timeout", s.Shutdown.Drain.String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.Shutdown.Drain)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	switch {
	case err == nil, errors.Is(err, http.ErrServerClosed):
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		log.Warn("shutting down: drain timed out, cutting the requests still running", "timeout", s.Shutdown.Drain.String())
		_ = srv.Close()
		return nil
	default:
		return err
	}
}
