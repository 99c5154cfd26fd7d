package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/net/http/httpguts"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/tracing"
)

// hopHeaders are connection-level headers that must not be forwarded
// (RFC 9110 section 7.6.1), plus headers the gateway sets itself.
var hopHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true,
	"Proxy-Authenticate": true, "Proxy-Authorization": true, "Te": true,
	"Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Expect": true, "Host": true, "Content-Length": true,
}

// strippedRequestHeaders are never taken from the client: the internal
// secret (no client may speak for a service) and forwarding headers the
// gateway recomputes.
var strippedRequestHeaders = map[string]bool{
	"X-Internal-Token": true, "X-Forwarded-For": true, "X-Forwarded-Host": true,
	"X-Forwarded-Proto": true, "Forwarded": true, "X-Real-Ip": true,
}

var (
	errBodyTooLarge = errors.New("request body exceeds the route's limit")
	errDetached     = errors.New("request finished")
)

// newTransport is the upstream HTTP client. ResponseHeaderTimeout is the
// upstream timeout: it starts once the request (with its body) is written,
// so a slow upload is not mistaken for a slow service, and it does not
// bound a long download once headers have arrived. Compression is off so
// bodies pass through byte for byte, never inflated here.
func newTransport(timeout time.Duration) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          512,
		MaxIdleConnsPerHost:   128,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: timeout,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
	}
}

// requestBody streams the client's body to the upstream. It counts bytes
// against the route's limit (chunked bodies announce no length), and it can
// be detached: net/http may still be reading a request body after
// RoundTrip returns, but fasthttp recycles the connection's reader once the
// response is written, so every Read holds the lock and Detach waits for
// it and turns later reads into errors.
type requestBody struct {
	mu       sync.Mutex
	r        io.Reader
	n, limit int64
	eof      atomic.Bool
	tooLarge bool
	detached bool
}

func (b *requestBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.detached {
		return 0, errDetached
	}
	if b.tooLarge {
		return 0, errBodyTooLarge
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.n > b.limit {
		b.tooLarge = true
		return 0, errBodyTooLarge
	}
	if errors.Is(err, io.EOF) {
		b.eof.Store(true)
	}
	return n, err
}

// Close is a no-op: the stream belongs to the client connection.
func (b *requestBody) Close() error { return nil }

// Detach stops all further reads and reports whether the whole body was read.
func (b *requestBody) Detach() (complete, tooLarge bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.detached = true
	return b.eof.Load(), b.tooLarge
}

// eofSeen reports, without waiting for a read in progress, whether the
// whole body has been read.
func (b *requestBody) eofSeen() bool { return b.eof.Load() }

// responseBody hands the upstream body to fasthttp, which streams it to
// the client and calls Close when done; Close then releases the upstream
// connection and detaches the request body.
type responseBody struct {
	body    io.ReadCloser
	reqBody *requestBody
	cancel  context.CancelFunc
	once    sync.Once
}

func (r *responseBody) Read(p []byte) (int, error) { return r.body.Read(p) }

func (r *responseBody) Close() error {
	r.once.Do(func() {
		_ = r.body.Close()
		if r.reqBody != nil {
			r.reqBody.Detach()
		}
		r.cancel()
	})
	return nil
}

// proxy forwards the request to base (a service URL) with the path without
// /api and the raw query, and streams the answer back.
func (g *Gateway) proxy(c *fiber.Ctx, rt *route.Route, path string, st *reqState) error {
	svc := rt.ServiceFor(func(p string) string { return c.Query(p) })
	if svc == "" {
		return problem.Invalid(rt.By.Param, "must be one of: "+strings.Join(slices.Sorted(maps.Keys(rt.By.Services)), ", "))
	}
	base, ok := g.cfg.Services[svc]
	if !ok || base == "" {
		return problem.Unavailable("the service for this route is not configured", 5)
	}
	target := base + (&url.URL{Path: path}).EscapedPath()
	if q := c.Context().URI().QueryString(); len(q) > 0 {
		target += "?" + string(q)
	}

	// The request context is not fiber's (fasthttp has none); cancel ends
	// the upstream exchange when the response body is closed or on error.
	ctx, cancel := context.WithCancel(c.UserContext())
	req, err := http.NewRequestWithContext(ctx, c.Method(), target, nil)
	if err != nil {
		cancel()
		return fmt.Errorf("build upstream request: %w", err)
	}

	var body *requestBody
	switch cl := c.Request().Header.ContentLength(); {
	case cl == 0 || cl == -2:
		req.Body, req.ContentLength = http.NoBody, 0
	default:
		body = &requestBody{r: c.Context().RequestBodyStream(), limit: rt.Limit()}
		req.Body = body
		req.ContentLength = int64(cl) // -1: chunked
		st.body = body
	}

	var badHeader error
	c.Request().Header.VisitAll(func(k, v []byte) {
		key := http.CanonicalHeaderKey(string(k))
		if hopHeaders[key] || strippedRequestHeaders[key] || badHeader != nil {
			return
		}
		badHeader = checkHeaderField(key, string(v))
		req.Header.Add(key, string(v))
	})
	if badHeader == nil {
		// Host is forwarded as X-Forwarded-Host.
		badHeader = checkHeaderField("Host", string(c.Request().Host()))
	}
	if badHeader == nil {
		// A trusted proxy's X-Forwarded-For is forwarded, extended.
		badHeader = checkHeaderField("X-Forwarded-For", st.forwardedFor)
	}
	if badHeader != nil {
		// net/http would refuse to send it: the client's mistake, not the
		// upstream's, so 400 before any round trip.
		cancel()
		return badHeader
	}
	// Headers named by Connection are hop-by-hop too.
	for _, h := range strings.Split(string(c.Request().Header.Peek("Connection")), ",") {
		if h = strings.TrimSpace(h); h != "" {
			req.Header.Del(h)
		}
	}
	req.Header.Set("X-Request-Id", st.requestID)
	req.Header.Set("X-Forwarded-For", st.forwardedFor)
	req.Header.Set("X-Forwarded-Host", string(c.Request().Host()))
	req.Header.Set("X-Forwarded-Proto", c.Protocol())
	req.Header.Del(auth.InternalHeader)
	// The service continues the request's span (or, tracing off, the
	// client's trace context): one span per proxied request, as a
	// reverse proxy traces (Envoy's default), since a client span of the
	// upstream call would only repeat the request span's work and timing.
	if trace.SpanContextFromContext(ctx).IsValid() {
		tracing.Propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}

	start := time.Now()
	resp, err := g.transport.RoundTrip(req)
	if err != nil {
		cancel()
		g.metrics.upstream.WithLabelValues(svc, "error").Observe(time.Since(start).Seconds())
		if body != nil {
			if _, tooLarge := body.Detach(); tooLarge {
				return problem.TooLarge(fmt.Sprintf("the request body exceeds %d bytes", rt.Limit()))
			}
		}
		return upstreamError(svc, err)
	}
	g.metrics.upstream.WithLabelValues(svc, statusClass(resp.StatusCode)).Observe(time.Since(start).Seconds())

	res := &c.Response().Header
	res.SetNoDefaultContentType(true)
	for k, vs := range resp.Header {
		if hopHeaders[k] || gatewayOwnedHeaders[k] || k == "Date" || k == "Server" {
			continue
		}
		// The service's value replaces one the gateway set (e.g. CORS).
		res.Del(k)
		for _, v := range vs {
			res.Add(k, v)
		}
	}
	for _, h := range resp.Header.Values("Connection") {
		for _, name := range strings.Split(h, ",") {
			res.Del(strings.TrimSpace(name))
		}
	}
	if rt.Auth == route.Key && resp.Header.Get(fiber.HeaderAccessControlAllowOrigin) == "" {
		// The service refused the origin (intake's 403 for an origin the
		// key does not allow): the refusal carries no CORS grant of the
		// gateway's either.
		res.Del(fiber.HeaderAccessControlAllowOrigin)
		res.Del(fiber.HeaderAccessControlExposeHeaders)
	}
	st.upstreamQuota = upstreamQuota(resp.Header)
	c.Status(resp.StatusCode)
	st.proxied = true
	rb := &responseBody{body: resp.Body, reqBody: body, cancel: cancel}
	c.Context().SetBodyStream(rb, int(resp.ContentLength))
	return nil
}

// checkHeaderField refuses a header that fasthttp parsed but net/http
// would not send (RFC 9110 section 5: a token for the name; no control
// characters but tab in the value). The detail names the header only when
// the name itself is valid.
func checkHeaderField(name, value string) error {
	if !httpguts.ValidHeaderFieldName(name) {
		return problem.BadRequest("bad_request", "a request header has a name that is not a valid HTTP field name")
	}
	if !httpguts.ValidHeaderFieldValue(value) {
		return problem.BadRequest("bad_request", "request header "+name+" has a value that is not a valid HTTP field value")
	}
	return nil
}

// upstreamError maps a transport failure to 503 (nothing listening), 504
// (no answer in time) or 502 (anything else); the cause is logged, never
// sent to the client.
func upstreamError(service string, err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), isDNSError(err), isDialError(err):
		return fmt.Errorf("%w: %s: %v", problem.Unavailable("the "+service+" service is unavailable", 5), service, err)
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %s: %v", problem.Timeout("the "+service+" service did not answer in time"), service, err)
	default:
		return fmt.Errorf("%w: %s: %v", problem.BadGateway("the "+service+" service failed to answer"), service, err)
	}
}

func isDNSError(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de)
}

func isDialError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

func statusClass(code int) string {
	return fmt.Sprintf("%dxx", code/100)
}
