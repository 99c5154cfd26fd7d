// Package svcclient is the HTTP client one context uses to call another's
// /internal API. It authenticates with the cluster's internal secret, sets
// Idempotency-Key on writes, and turns transport failures and upstream
// answers into problem errors with the right category: a dependency that is
// down is 503, slow is 504, broken is 502; its 404/409/422 pass through.
package svcclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/tracing"
)

// Client calls one service.
type Client struct {
	// Name is the service name used in error details ("contacts").
	Name    string
	BaseURL string
	Secret  string
	// Timeout bounds each call, the answer's body included (0: none). It
	// is a context deadline rather than http.Client.Timeout: behind a
	// transport net/http does not know (the traced one wraps it), that
	// timeout costs a goroutine and a timer per call to cancel the request.
	Timeout time.Duration
	HTTP    *http.Client
	// traced sends a call that is part of a recorded trace, or of none,
	// through otelhttp's transport (over HTTP's own): a client span per
	// call, whose W3C context the callee continues. Without a trace the
	// span is dropped and the context it sends (a new trace id, not
	// sampled) keeps the callee from starting a trace of its own for a
	// background job's call. A call in a trace that is not recorded goes
	// straight through HTTP with the caller's context, which Do sets: its
	// span would not be recorded either, and otelhttp's transport clones
	// the request and builds its metric attributes whether or not it is.
	traced *http.Client
}

// New returns a client with a 10 s timeout per call and a connection pool
// sized for a busy service: net/http's default keeps only two idle
// connections per host, so under concurrency every other call would open
// a new TCP connection.
func New(name, baseURL, secret string) *Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	t.IdleConnTimeout = 90 * time.Second
	c := &Client{Name: name, BaseURL: baseURL, Secret: secret, Timeout: 10 * time.Second, HTTP: &http.Client{Transport: t}}
	if tracing.Active() {
		c.traced = &http.Client{Transport: otelhttp.NewTransport(t, otelhttp.WithPropagators(tracing.Propagator),
			otelhttp.WithTracerProvider(tracing.Provider()),
			// The services' metrics are Prometheus's; no OpenTelemetry meter is read.
			otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + name }))}
	}
	return c
}

// client is the HTTP client for a call made under ctx (see traced).
func (c *Client) client(ctx context.Context) *http.Client {
	if c.traced == nil {
		return c.HTTP
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() || !span.SpanContext().IsValid() {
		return c.traced
	}
	return c.HTTP
}

// Do sends body (JSON, may be nil) and decodes a 2xx JSON answer into out
// (may be nil). idemKey, when set, is sent as Idempotency-Key.
func (c *Client) Do(ctx context.Context, method, path, idemKey string, body, out any) error {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s: encode: %w", c.Name, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	req.Header.Set(auth.InternalHeader, c.Secret)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	history.Propagate(ctx, req.Header)
	if id := problem.RequestID(ctx); id != "" {
		req.Header.Set(httpx.RequestIDHeader, id)
	}
	// The caller's trace context travels on (the traced transport
	// replaces it with its client span's).
	tracing.Propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := c.client(ctx).Do(req)
	if err != nil {
		return c.transportError(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return c.transportError(err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out == nil || len(raw) == 0 {
			return nil
		}
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s: decode answer: %w", c.Name, problem.FromFault(fault.New(fault.KindBadUpstream, "upstream_unavailable", c.Name+" answered with an unreadable body")))
		}
		return nil
	}
	return c.StatusError(resp.StatusCode, raw)
}

// Exists reports whether GET path answers 2xx (true) or 404 (false), for
// checking that a record of another context exists; any other answer is
// the error Do returns (503 when the service is down, and so on).
func (c *Client) Exists(ctx context.Context, path string) (bool, error) {
	err := c.Do(ctx, http.MethodGet, path, "", nil, nil)
	switch {
	case err == nil:
		return true, nil
	case fault.KindOf(err) == fault.KindNotFound:
		return false, nil
	}
	return false, err
}

// StatusError maps a non-2xx answer of the service to an error: its own
// 4xx refusals keep their problem (code, detail, field errors) so a caller
// can pass them on; unavailability and timeouts become 503/504; anything
// else is a 502. Batch endpoints that answer a status per item use it too.
//
// The error is a *problem.Error carrying the refusal as a *fault.Error
// (Unwrap), so a core reads its kind (fault.KindOf) without knowing HTTP.
func (c *Client) StatusError(status int, raw []byte) error {
	if kind, ok := passedOn[status]; ok {
		var b struct {
			Code   string        `json:"code"`
			Detail string        `json:"detail"`
			Errors []fault.Field `json:"errors"`
		}
		_ = json.Unmarshal(raw, &b)
		if b.Code == "" {
			b.Code = "upstream_error"
		}
		f := fault.New(kind, b.Code, b.Detail)
		f.Fields = b.Errors
		return problem.FromFault(f)
	}
	switch status {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return c.unavailable()
	case http.StatusGatewayTimeout:
		return c.timeout()
	default:
		return &StatusErr{Service: c.Name, Status: status,
			err: problem.FromFault(fault.New(fault.KindBadUpstream, "upstream_unavailable", c.Name+" failed"))}
	}
}

// passedOn are the refusals of another context a caller may pass on, by
// the kind each one is.
var passedOn = map[int]fault.Kind{
	http.StatusNotFound:            fault.KindNotFound,
	http.StatusConflict:            fault.KindConflict,
	http.StatusUnprocessableEntity: fault.KindInvalid,
	http.StatusBadRequest:          fault.KindMalformed,
}

func (c *Client) unavailable() error {
	return problem.FromFault(fault.Unavailablef(5, "%s is unavailable", c.Name))
}

func (c *Client) timeout() error {
	return problem.FromFault(fault.New(fault.KindTimeout, "upstream_timeout", c.Name+" did not answer in time"))
}

// StatusErr is an answer no caller passes on (401, 403, 5xx...): a 502 to
// whoever asked, but a typed client that gives one of these statuses a
// meaning (identity's 401 for an unknown API key) can read it with
// errors.As.
type StatusErr struct {
	Service string
	Status  int
	err     *problem.Error
}

func (e *StatusErr) Error() string {
	return fmt.Sprintf("%s answered %d: %v", e.Service, e.Status, e.err)
}

// Unwrap is the 502 problem, so the edge renders it as before.
func (e *StatusErr) Unwrap() error { return e.err }

func (c *Client) transportError(err error) error {
	// The URL error names the request's full URL, query included (an email
	// in a match lookup); the cause alone goes into the logged chain.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("%s: %v: %w", c.Name, err, c.timeout())
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%s: %v: %w", c.Name, err, c.unavailable())
}
