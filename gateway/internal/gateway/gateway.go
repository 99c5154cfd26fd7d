// Package gateway is the platform's single entry point: it routes /api/...
// to the services, verifies JWTs, the admin role and API keys, applies rate
// limits, body limits, request ids and security headers, and serves the
// OpenAPI document. Services verify credentials again themselves; the
// gateway is a first line, not the only one.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/route"
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
	// readBufferSize is also the largest request line plus header fields
	// accepted; a larger block is refused with 431 before it is parsed
	// (see headersTooLarge). A buffer this size exists per connection, so
	// it stays small.
	readBufferSize = 32 << 10
)

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:\-]{1,128}$`)

// Gateway holds the wired dependencies; App serves them.
type Gateway struct {
	cfg       Config
	log       *slog.Logger
	app       *fiber.App
	table     *table
	transport *http.Transport
	verifier  *auth.Verifier
	jwks      *auth.JWKS
	keys      *identityapi.KeyVerifier
	tokens    *tokenVerifier
	rdb       *redis.Client
	limiter   *Limiter
	metrics   *metrics
	queuesUI  *queuesUI
	openapi   *customFieldsDoc

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
	// route is the declared path the request matched ("/contacts/{id}"),
	// its metrics label.
	route string
	// deprecated is the matched route's deprecation, nil when it has
	// none (or the method is not the route's: a 405 is no answer of it).
	deprecated *route.Deprecation
	// allow is set when the path exists but not for the request's
	// method: the methods it takes, answered with a 405.
	allow        string
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
	ropts, err := redis.ParseURL(string(cfg.RedisURL))
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	ropts.DialTimeout, ropts.ReadTimeout, ropts.WriteTimeout = 250*time.Millisecond, 250*time.Millisecond, 250*time.Millisecond
	ropts.MaxRetries = -1
	rdb := redis.NewClient(ropts)
	tracing.Redis(rdb)

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
	tokens, err := newTokenVerifier(cfg.Services[SvcIdentity], cfg.InternalSecret, cfg.APIKeyCacheTTL)
	if err != nil {
		return nil, err
	}
	transport := newTransport(cfg.UpstreamTimeout)
	qui, err := newQueuesUI(string(cfg.QueuesRedisURL))
	if err != nil {
		return nil, err
	}
	tbl := newTable(Routes())
	g := &Gateway{
		queuesUI: qui,
		cfg:      cfg, log: log, table: tbl,
		transport: transport,
		verifier:  verifier, jwks: jwks,
		keys:    keys,
		tokens:  tokens,
		rdb:     rdb,
		limiter: NewLimiter(rdb, cfg.RateLimitPrefix, log),
		metrics: m, openapi: newCustomFieldsDoc(specJSON, Routes(), cfg.Services, cfg.InternalSecret, log),
	}
	g.app = fiber.New(fiber.Config{
		DisableStartupMessage:        true,
		StrictRouting:                true,
		CaseSensitive:                true,
		Immutable:                    true,
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		BodyLimit:                    int(tbl.maxLimit),
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
	g.app.Get("/openapi.json", g.serveOpenAPI)
	if err := docsRoutes(g.app); err != nil {
		return nil, fmt.Errorf("docs: %w", err)
	}
	g.app.Use(g.api)
	return g, nil
}

// serveOpenAPI answers the document typed for this installation's
// custom fields, with an ETag; 304 when the client's copy is current.
func (g *Gateway) serveOpenAPI(c *fiber.Ctx) error {
	doc, etag := g.openapi.get(c.UserContext())
	c.Set(fiber.HeaderETag, etag)
	c.Set(fiber.HeaderCacheControl, "no-cache")
	if c.Get(fiber.HeaderIfNoneMatch) == etag {
		return c.SendStatus(fiber.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, "application/json")
	return c.Send(doc)
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
	if d := g.cfg.Shutdown.Delay; d > 0 {
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
	g.log.Info("shutting down: draining requests in flight", "timeout", g.cfg.Shutdown.Drain.String())
	err := g.app.ShutdownWithTimeout(g.cfg.Shutdown.Drain)
	if errors.Is(err, context.DeadlineExceeded) {
		g.log.Warn("shutting down: drain timed out, cutting the requests still running", "timeout", g.cfg.Shutdown.Drain.String())
		return nil
	}
	return err
}
