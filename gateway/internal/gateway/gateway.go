// Package gateway is the platform's single entry point: it routes /api/...
// to the services, verifies JWTs, the admin role and API keys, applies rate
// limits, body limits, request ids and security headers, and serves the
// OpenAPI document. Services verify credentials again themselves; the
// gateway is a first line, not the only one.
package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/tracing"
)

// Server limits. Header reading is short (slow-header clients are cut
// off); once headers are in, a body may take minutes (25 MB uploads on slow
// links) and so may a response (large downloads to slow readers).
const (
	headerReadTimeout = 15 * time.Second
	bodyReadTimeout   = 10 * time.Minute
	writeTimeout      = 10 * time.Minute
	idleTimeout       = 120 * time.Second
	// readBufferSize is also the largest request header block accepted;
	// larger headers are refused as a bad credential, 401 (a buffer this size exists per connection, so
	// it stays small).
	readBufferSize = 32 << 10
)

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:\-]{1,128}$`)

// Gateway holds the wired dependencies; App serves them.
type Gateway struct {
	cfg       Config
	log       *slog.Logger
	app       *fiber.App
	table     []Route
	transport *http.Transport
	verifier  *auth.Verifier
	jwks      *auth.JWKS
	keys      *identityapi.KeyVerifier
	tokens    *TokenVerifier
	rdb       *redis.Client
	limiter   *Limiter
	metrics   *metrics
	routes    *routeTemplates
	queuesUI  *queuesUI
	// upstream is transport, traced when tracing is active: a client span
	// per proxied request whose W3C trace context the service continues.
	upstream http.RoundTripper
	openapi  []byte

	// draining is set once Serve's context ends: /readyz answers 503 and
	// every response closes its connection.
	draining atomic.Bool
	// after and onDrain let tests end the shutdown delay and see the
	// drain start; nil in production.
	after   func(time.Duration) <-chan time.Time
	onDrain func()
}

// reqState is what one request accumulates on its way through.
type reqState struct {
	requestID string
	route     string
	// path is the request path without /api, once the table matched it.
	path         string
	clientIP     netip.Addr
	forwardedFor string
	quota        *Quota
	// upstreamQuota is the service's own RateLimit-* set, when its
	// response carried one.
	upstreamQuota *Quota
	body          *requestBody
	proxied       bool
	closeConn     bool
}

const stateKey = "gw"

func state(c *fiber.Ctx) *reqState {
	st, _ := c.Locals(stateKey).(*reqState)
	if st == nil {
		st = &reqState{}
		c.Locals(stateKey, st)
	}
	return st
}

// New wires a gateway from cfg. It does not contact Redis or identity:
// both are used lazily (and reported by /readyz), so start-up order does
// not matter.
func New(cfg Config, log *slog.Logger) (*Gateway, error) {
	ropts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	ropts.DialTimeout, ropts.ReadTimeout, ropts.WriteTimeout = 250*time.Millisecond, 250*time.Millisecond, 250*time.Millisecond
	ropts.MaxRetries = -1
	rdb := redis.NewClient(ropts)
	if err := tracing.Redis(rdb); err != nil {
		return nil, err
	}

	jwks := auth.NewJWKS(cfg.JWKSURL)
	revocations, err := auth.NewRevocations(rdb, log)
	if err != nil {
		return nil, err
	}
	verifier, err := auth.NewVerifier(jwks, auth.Issuer, auth.Audience, auth.WithRevocations(revocations))
	if err != nil {
		return nil, err
	}
	m, err := newMetrics()
	if err != nil {
		return nil, err
	}
	spec, err := OpenAPI()
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	keys, err := newKeyVerifier(cfg.Services[SvcIdentity], cfg.InternalSecret, cfg.APIKeyCacheTTL)
	if err != nil {
		return nil, err
	}
	transport := newTransport(cfg.UpstreamTimeout)
	var upstream http.RoundTripper = transport
	if tracing.Active() {
		upstream = otelhttp.NewTransport(transport, otelhttp.WithPropagators(tracing.Propagator),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " upstream" }))
	}
	qui, err := newQueuesUI(cfg.QueuesRedisURL)
	if err != nil {
		return nil, err
	}
	g := &Gateway{
		queuesUI: qui,
		cfg:      cfg, log: log, table: Table,
		transport: transport,
		upstream:  upstream,
		routes:    newRouteTemplates(Operations()),
		verifier:  verifier, jwks: jwks,
		keys:    keys,
		tokens:  NewTokenVerifier(cfg.Services[SvcIdentity], cfg.InternalSecret, cfg.APIKeyCacheTTL),
		rdb:     rdb,
		limiter: NewLimiter(rdb, cfg.RateLimitPrefix, log),
		metrics: m, openapi: specJSON,
	}
	g.app = fiber.New(fiber.Config{
		DisableStartupMessage:        true,
		StrictRouting:                true,
		CaseSensitive:                true,
		Immutable:                    true,
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		BodyLimit:                    int(LimitExecuted),
		ReadBufferSize:               readBufferSize,
		ReadTimeout:                  headerReadTimeout,
		WriteTimeout:                 writeTimeout,
		IdleTimeout:                  idleTimeout,
		ErrorHandler:                 g.errorHandler,
	})
	g.app.Server().HeaderReceived = func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
		return fasthttp.RequestConfig{ReadTimeout: bodyReadTimeout}
	}
	g.app.Use(g.base)
	g.app.Get("/healthz", func(c *fiber.Ctx) error {
		return c.JSON(map[string]string{"status": "ok"})
	})
	g.app.Get("/readyz", g.ready)
	g.app.Get("/openapi.json", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, "application/json")
		return c.Send(g.openapi)
	})
	if err := docsRoutes(g.app); err != nil {
		return nil, fmt.Errorf("docs: %w", err)
	}
	g.app.Use(g.api)
	return g, nil
}

// App is the fiber application (for tests and Serve).
func (g *Gateway) App() *fiber.App { return g.app }

// Close releases Redis, the queues UI's and idle upstream connections.
func (g *Gateway) Close() error {
	g.transport.CloseIdleConnections()
	_ = g.queuesUI.Close()
	return g.rdb.Close()
}

// Serve runs the gateway on ln until ctx ends, then stops in two steps:
// for cfg.ShutdownDelay it keeps serving while /readyz answers 503 and
// responses close their connections, so load balancers and keep-alive
// clients move to other replicas; then it closes the listener and lets
// requests in flight finish for up to cfg.DrainTimeout. A drain cut short
// is a warning, not an error.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- g.app.Listener(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	g.draining.Store(true)
	if d := g.cfg.ShutdownDelay; d > 0 {
		after := g.after
		if after == nil {
			after = time.After
		}
		g.log.Info("shutting down: not ready, still serving", "delay", d.String())
		select {
		case err := <-errc:
			return err
		case <-after(d):
		}
	}
	if g.onDrain != nil {
		g.onDrain()
	}
	g.log.Info("shutting down: draining requests in flight", "timeout", g.cfg.DrainTimeout.String())
	err := g.app.ShutdownWithTimeout(g.cfg.DrainTimeout)
	if errors.Is(err, context.DeadlineExceeded) {
		g.log.Warn("shutting down: drain timed out, cutting the requests still running", "timeout", g.cfg.DrainTimeout.String())
		return nil
	}
	return err
}

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
	g.finishBody(c, st)

	route := g.routes.label(c.Method(), st.path, st.route)
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

// api routes /api/... through the table: CORS, body checks, rate limits,
// authentication, then the proxy.
func (g *Gateway) api(c *fiber.Ctx) error {
	st := state(c)
	full := string(c.Context().URI().Path()) // decoded and normalised: no "..", no "//"
	if !strings.HasPrefix(full, "/api/") {
		return problem.NotFound("route")
	}
	if !Canonical(string(c.Request().URI().PathOriginal())) {
		p := *problem.NotFound("route")
		p.Detail = "no route has this path: it is not in canonical form (an empty, '.' or '..' segment, or an encoded '/' or '\\')"
		return &p
	}
	path := strings.TrimPrefix(full, "/api")
	if isQueuesPath(path) {
		remote, _ := netip.AddrFromSlice(c.Context().RemoteIP())
		st.clientIP = clientIP(remote, forwardedFor(&c.Request().Header), g.cfg.TrustedProxies)
		return g.queues(c, st)
	}
	rt := Match(g.table, c.Method(), path)
	if rt == nil {
		return problem.NotFound("route")
	}
	st.route, st.path = rt.Pattern, path
	ctx := c.UserContext()

	if rt.Policy == Key && g.cors(c) {
		return nil // preflight answered
	}
	if err := checkBody(c, rt); err != nil {
		return err
	}

	remote, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	xff := forwardedFor(&c.Request().Header)
	st.clientIP = clientIP(remote, xff, g.cfg.TrustedProxies)
	st.forwardedFor = remote.Unmap().String()
	if xff != "" && isTrusted(remote.Unmap(), g.cfg.TrustedProxies) {
		st.forwardedFor = xff + ", " + st.forwardedFor
	}

	if err := g.rateLimit(ctx, st, "ip", st.clientIP.String(), g.cfg.IPPerMinute); err != nil {
		return err
	}

	switch rt.Policy {
	case JWT, Admin:
		tok, ok := auth.BearerToken(c.Get(fiber.HeaderAuthorization))
		if !ok {
			return problem.Unauthenticated("missing bearer token")
		}
		if isAccessToken(tok) {
			if err := g.accessToken(c, st, rt, tok); err != nil {
				return err
			}
			break
		}
		claims, err := g.verifier.Verify(ctx, tok)
		if err != nil {
			return err
		}
		if rt.Policy == Admin && !claims.IsAdmin() {
			return problem.Forbidden("this action requires the admin role")
		}
		if err := g.rateLimit(ctx, st, "user", claims.Subject, g.cfg.UserPerMinute); err != nil {
			return err
		}
	case Key:
		if len(c.Request().Header.Peek(fiber.HeaderAuthorization)) > 0 {
			return keyProblem("bearer tokens are not accepted on the public API: send the API key in X-API-Key")
		}
		if err := g.verifyKey(ctx, c.Get("X-API-Key")); err != nil {
			return err
		}
	}
	return g.proxy(c, rt, path, st)
}

// accessToken authenticates an integration token: identity verifies it
// (cached), the route's scope is checked, the token's service user is rate
// limited like any user, and the request goes on with the access token
// identity minted for that user in place of the secret, so services verify
// the caller exactly as they verify a person's token.
func (g *Gateway) accessToken(c *fiber.Ctx, st *reqState, rt *Route, tok string) error {
	ctx := c.UserContext()
	grant, err := g.tokens.Verify(ctx, tok)
	if err != nil {
		return err
	}
	if scope := rt.Scope(c.Method()); scope != "" && !auth.GrantsScope(grant.Scopes, scope) {
		return insufficientScope(scope)
	}
	if rt.Policy == Admin && grant.Role != auth.RoleAdmin {
		return problem.Forbidden("this action requires the admin role")
	}
	if err := g.rateLimit(ctx, st, "user", strconv.FormatInt(grant.UserID, 10), g.cfg.UserPerMinute); err != nil {
		return err
	}
	c.Request().Header.Set(fiber.HeaderAuthorization, "Bearer "+grant.AccessToken)
	return nil
}

// forwardedFor is every X-Forwarded-For line as one list: a proxy may add
// its own line rather than append to the client's (HAProxy's option
// forwardfor does), and RFC 9110 section 5.3 makes the lines one
// comma-separated value. Peek would return the first line only, the
// client's.
func forwardedFor(h *fasthttp.RequestHeader) string {
	lines := h.PeekAll(fiber.HeaderXForwardedFor)
	if len(lines) == 1 {
		return string(lines[0])
	}
	parts := make([]string, 0, len(lines))
	for _, l := range lines {
		if l := strings.TrimSpace(string(l)); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, ", ")
}

// rateLimit counts the request against one limit and keeps the tightest
// quota for the RateLimit-* headers.
func (g *Gateway) rateLimit(ctx context.Context, st *reqState, kind, key string, limit int) error {
	q, ok := g.limiter.Allow(ctx, kind, key, limit)
	if !ok {
		return nil
	}
	if st.quota == nil || q.Limited || (!st.quota.Limited && q.Remaining < st.quota.Remaining) {
		st.quota = &q
	}
	if q.Limited {
		return problem.RateLimited(q.Reset)
	}
	return nil
}

// checkBody refuses compressed bodies (never inflated here, so a gzip bomb
// costs nothing) and bodies whose declared length is over the route limit,
// before a byte of the body is read. Chunked bodies are capped as they
// stream (requestBody).
func checkBody(c *fiber.Ctx, rt *Route) error {
	if ce := strings.TrimSpace(c.Get(fiber.HeaderContentEncoding)); ce != "" && !strings.EqualFold(ce, "identity") {
		return problem.UnsupportedMediaType("compressed request bodies are not accepted (Content-Encoding must be identity)")
	}
	if cl := int64(c.Request().Header.ContentLength()); cl > rt.Limit() {
		return problem.TooLarge(fmt.Sprintf("the request body exceeds %d bytes", rt.Limit()))
	}
	return nil
}

// cors applies CORS to the public API and answers preflights; it reports
// whether the request was a preflight (then fully answered).
func (g *Gateway) cors(c *fiber.Ctx) bool {
	origin := c.Get(fiber.HeaderOrigin)
	allow := g.allowedOrigin(origin)
	c.Vary(fiber.HeaderOrigin)
	if allow != "" {
		c.Set(fiber.HeaderAccessControlAllowOrigin, allow)
		c.Set(fiber.HeaderAccessControlExposeHeaders, "X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset")
	}
	if c.Method() != fiber.MethodOptions || c.Get(fiber.HeaderAccessControlRequestMethod) == "" {
		return false
	}
	if allow != "" {
		c.Set(fiber.HeaderAccessControlAllowMethods, "POST, OPTIONS")
		c.Set(fiber.HeaderAccessControlAllowHeaders, "Content-Type, X-API-Key, Idempotency-Key, X-Request-Id")
		c.Set(fiber.HeaderAccessControlMaxAge, "600")
	}
	c.Status(fiber.StatusNoContent)
	return true
}

func (g *Gateway) allowedOrigin(origin string) string {
	if origin == "" {
		return ""
	}
	for _, o := range g.cfg.CORSOrigins {
		if o == "*" {
			return "*"
		}
		if strings.EqualFold(o, origin) {
			return origin
		}
	}
	return ""
}

// ready answers 200 once the gateway has signing keys: with them it
// serves every route even while identity is away (cached keys keep
// verifying: "Authentication is unaffected") or Redis is (rate
// limits fail open). Before identity's JWKS has answered once, a token
// cannot be checked, so it is 503. Redis and the freshness of the keys
// ("stale": identity did not answer the latest fetch) are reported in the
// body and the gateway_dependency_up gauge without failing readiness; once
// Serve is stopping it is 503 whatever the checks.
func (g *Gateway) ready(c *fiber.Ctx) error {
	status, body := g.readiness(c.UserContext())
	return c.Status(status).JSON(body)
}

// readiness runs the checks of /readyz (public and ops listeners alike).
func (g *Gateway) readiness(ctx context.Context) (int, map[string]any) {
	if g.draining.Load() {
		return fiber.StatusServiceUnavailable, map[string]any{"status": "shutting_down"}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	checks := map[string]string{}
	ok := true
	up := func(dep string, v bool) {
		n := 0.0
		if v {
			n = 1
		}
		g.metrics.dependency.WithLabelValues(dep).Set(n)
	}
	if err := g.jwks.Ready(ctx); err != nil {
		ok, checks["jwks"] = false, "unavailable"
		up("jwks", false)
		g.log.WarnContext(ctx, "readiness check failed", "check", "jwks", "error", err.Error())
	} else if _, lastErr := g.jwks.State(); lastErr != nil {
		checks["jwks"] = "stale"
		up("jwks", false)
		g.log.WarnContext(ctx, "identity's JWKS did not answer the latest fetch; verifying with the cached keys",
			"check", "jwks", "error", lastErr.Error())
	} else {
		checks["jwks"] = "ok"
		up("jwks", true)
	}
	if err := g.rdb.Ping(ctx).Err(); err != nil {
		checks["redis"] = "unavailable"
		up("redis", false)
		g.log.WarnContext(ctx, "redis is unavailable: rate limits fail open", "check", "redis", "error", err.Error())
	} else {
		checks["redis"] = "ok"
		up("redis", true)
	}
	if !ok {
		return fiber.StatusServiceUnavailable, map[string]any{"status": "unavailable", "checks": checks}
	}
	return fiber.StatusOK, map[string]any{"status": "ok", "checks": checks}
}

// errorHandler renders every error as problem+json: the gateway's own
// problems, fiber's and fasthttp's errors (header too large, timeouts,
// malformed requests), and anything else as a bare 500.
func (g *Gateway) errorHandler(c *fiber.Ctx, err error) error {
	p := toProblem(err)
	st := state(c)
	if st.requestID == "" { // fasthttp-level error: base did not run
		st.requestID = requestID(c)
		c.SetUserContext(problem.WithRequestID(context.Background(), st.requestID))
		g.securityHeaders(c)
	}
	if p.Status >= 500 {
		g.log.LogAttrs(c.UserContext(), slog.LevelError, "request failed",
			slog.String("error", err.Error()), slog.Int("status", p.Status),
			slog.String("method", c.Method()), slog.String("route", st.route))
	}
	h := &c.Response().Header
	for k, vs := range p.Header {
		h.Del(k)
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	body, merr := json.Marshal(problem.BodyOf(p, st.requestID))
	if merr != nil {
		return merr
	}
	c.Status(p.Status)
	h.Set(fiber.HeaderContentType, problem.ContentType)
	return c.Send(append(body, '\n'))
}

func toProblem(err error) *problem.Error {
	var p *problem.Error
	if errors.As(err, &p) {
		return p
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		switch fe.Code {
		case fiber.StatusNotFound:
			return problem.NotFound("route")
		case fiber.StatusMethodNotAllowed:
			return &problem.Error{Status: 405, Code: "method_not_allowed", Title: "Method Not Allowed", Detail: "method not allowed"}
		case fiber.StatusRequestEntityTooLarge:
			return problem.TooLarge("the request body is too large")
		case fiber.StatusRequestHeaderFieldsTooLarge:
			// Oversized headers almost always carry a forged or garbage
			// credential (the classic: a megabyte "token"); no valid token or
			// key is that large, so the answer is the same 401 as for any bad
			// credential, decided before anything is parsed.
			return problem.Unauthenticated(fmt.Sprintf("request headers exceed %d bytes; no valid credential is that large", readBufferSize))
		case fiber.StatusRequestTimeout:
			return &problem.Error{Status: 408, Code: "request_timeout", Title: "Request Timeout", Detail: "the request was not received in time"}
		case fiber.StatusBadRequest:
			return problem.BadRequest("bad_request", "the request could not be parsed")
		}
	}
	return problem.Internal()
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
