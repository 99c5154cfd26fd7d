package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/problem"
)

// base runs around every request: request id, security headers, rate-limit
// headers, access log and metrics, and problem rendering of errors.
func (g *Gateway) base(c *fiber.Ctx) error {
	start := time.Now()
	st := state(c)
	st.requestID = requestID(c)
	if g.draining.Load() {
		// Stopping: let keep-alive clients reconnect to another replica.
		c.Context().SetConnectionClose()
	}
	ctx, span := startSpan(problem.WithRequestID(context.Background(), st.requestID), c)
	c.SetUserContext(ctx)
	g.securityHeaders(c)

	var err error
	if ambiguousFraming(c.Request().Header.RawHeaders()) {
		// A front proxy and this server could disagree on where such a
		// body ends (request smuggling): refuse it and drop the connection.
		st.closeConn = true
		err = problem.BadRequest("bad_request", "ambiguous Content-Length or Transfer-Encoding")
	} else {
		err = c.Next()
	}
	if err != nil {
		if herr := g.errorHandler(c, err); herr != nil {
			return herr
		}
	}
	if q := st.quota; q != nil && !st.upstreamQuota.tighterThan(q) {
		// A tighter quota from the service (intake's per-key limit) stays
		// as it was copied; otherwise the gateway's tightest replaces it.
		h := &c.Response().Header
		h.Set("RateLimit-Limit", strconv.Itoa(q.Limit))
		h.Set("RateLimit-Remaining", strconv.Itoa(q.Remaining))
		h.Set("RateLimit-Reset", strconv.Itoa(q.Reset))
	}
	if st.deprecated != nil {
		// Every answer of a deprecated route says so, a refusal too.
		setDeprecation(&c.Response().Header, st.deprecated)
	}
	g.finishBody(c, st)

	route := st.route
	if route == "" {
		route = opsRoute(c.Route().Path)
	}
	status := c.Response().StatusCode()
	method := metricMethod(c.Method())
	endSpan(span, method, route, status)
	g.metrics.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	g.metrics.duration.WithLabelValues(route, method).Observe(time.Since(start).Seconds())
	g.log.LogAttrs(c.UserContext(), slog.LevelInfo, "request",
		slog.String("method", method), slog.String("route", route),
		slog.Int("status", status), slog.Duration("duration", time.Since(start)))
	return nil
}

// drainLimit is how much of a refused body the gateway reads and discards
// so the client sees the answer instead of a reset connection; drainTime
// bounds how long a slow client can hold the connection doing so.
const (
	drainLimit = 32 << 20
	drainTime  = 10 * time.Second
)

// finishBody deals with a request body the gateway did not read to the end:
// it is still on the wire and would otherwise be parsed as the next request
// on the connection. A refused body of reasonable size is drained (as
// nginx's lingering close does), so the client, still writing, reads the
// problem rather than a reset; otherwise the connection is closed.
func (g *Gateway) finishBody(c *fiber.Ctx, st *reqState) {
	cl := c.Request().Header.ContentLength()
	if st.closeConn {
		c.Context().SetConnectionClose()
		return
	}
	if cl == 0 || cl == -2 || (st.body != nil && st.body.eofSeen()) {
		return
	}
	if st.proxied || cl > drainLimit {
		// While a response streams, the upstream exchange may still own
		// the body reader; never read it from here.
		c.Context().SetConnectionClose()
		return
	}
	_ = c.Context().Conn().SetReadDeadline(time.Now().Add(drainTime))
	n, err := io.Copy(io.Discard, io.LimitReader(c.Context().RequestBodyStream(), drainLimit+1))
	if err != nil || n > drainLimit {
		c.Context().SetConnectionClose()
	}
}

// setDeprecation sets the Deprecation, Sunset and Link headers of d
// (deprecationHeaderValues) on an answer, replacing any the service
// sent: the declaration is the one source.
func setDeprecation(h *fasthttp.ResponseHeader, d *route.Deprecation) {
	dep, sunset, link := deprecationHeaderValues(d)
	h.Set("Deprecation", dep)
	h.Set("Sunset", sunset)
	h.Add("Link", link)
}

func opsRoute(p string) string {
	switch p {
	case "/healthz", "/readyz", "/metrics", "/openapi.json", "/docs", "/docs/problems":
		return p
	}
	if strings.HasPrefix(p, "/docs/assets/") {
		return "/docs/assets"
	}
	return "unmatched"
}
func metricMethod(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
		return m
	}
	return "OTHER"
}

// requestID accepts a well-formed X-Request-Id or generates one, echoes it
// on the response and forwards it upstream.
func requestID(c *fiber.Ctx) string {
	id := c.Get(fiber.HeaderXRequestID)
	if !validRequestID.MatchString(id) {
		id = uuid.NewString()
		c.Request().Header.Set(fiber.HeaderXRequestID, id)
	}
	c.Set(fiber.HeaderXRequestID, id)
	return id
}

// gatewayOwnedHeaders are set by the gateway on every response; upstream
// values are dropped so there is exactly one of each.
var gatewayOwnedHeaders = map[string]bool{
	"X-Content-Type-Options": true, "X-Frame-Options": true, "Referrer-Policy": true,
	"Content-Security-Policy": true, "Strict-Transport-Security": true, "X-Request-Id": true,
}

func (g *Gateway) securityHeaders(c *fiber.Ctx) {
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("X-Frame-Options", "DENY")
	c.Set("Referrer-Policy", "no-referrer")
	c.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	if g.cfg.HSTSMaxAge > 0 {
		c.Set("Strict-Transport-Security", "max-age="+strconv.Itoa(g.cfg.HSTSMaxAge)+"; includeSubDomains")
	}
}

// ambiguousFraming reports a request whose body length two HTTP parsers
// could read differently: more than one Content-Length, more than one
// Transfer-Encoding, both at once, or a Transfer-Encoding other than plain
// chunked (RFC 9112 section 6.3).
func ambiguousFraming(raw []byte) bool {
	var cl, te int
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		switch {
		case bytes.EqualFold(bytes.TrimSpace(name), []byte("Content-Length")):
			cl++
		case bytes.EqualFold(bytes.TrimSpace(name), []byte("Transfer-Encoding")):
			te++
			if !bytes.EqualFold(bytes.TrimSpace(value), []byte("chunked")) {
				return true
			}
		}
	}
	return cl > 1 || te > 1 || (cl > 0 && te > 0)
}
