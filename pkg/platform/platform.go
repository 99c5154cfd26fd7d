// Package platform opens what every context service runs on — its logger,
// its schema-confined and migrated database, Redis, the JWT verifier (with identity's revocations) and
// the ops endpoints — so each service's main wires only what is its own.
package platform

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/logx"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/tracing"
)

// Settings are the variables every context service reads
// (docs/architecture.md); a service's configuration struct embeds them
// and is read by config.Parse.
type Settings struct {
	config.Common
	// IdentityURL is where the JWKS and the user snapshot come from.
	IdentityURL string `env:"IDENTITY_URL" envDefault:"http://localhost:8081"`
	// InternalSecret authenticates /internal calls between services.
	InternalSecret string `env:"CRM_INTERNAL_SECRET,required"`
	// DBMaxConns caps the pool; 0 keeps pgx's default.
	DBMaxConns int `env:"DB_MAX_CONNS" envDefault:"0" min:"0" max:"1000"`
	// Shutdown is read here so a bad value fails start-up with the rest;
	// httpx.Serve reads the same variables.
	Shutdown httpx.Shutdown
	// Tracing is the OpenTelemetry exporter setting (off when unset).
	Tracing tracing.Config
	// HistoryRetention is how long record history is kept; 0 keeps it
	// until a record's person is erased.
	HistoryRetention time.Duration `env:"CRM_HISTORY_RETENTION" envDefault:"0s" min:"0s"`
}

// PruneHistory deletes the record history older than s.HistoryRetention
// every hour until ctx ends (nothing when it is 0); for platform.Background.
func (s Settings) PruneHistory(d *db.DB, log *slog.Logger) func(context.Context) {
	return func(ctx context.Context) {
		if s.HistoryRetention <= 0 {
			return
		}
		Every(ctx, time.Hour, log, "history pruning", func(ctx context.Context) error {
			_, err := history.Prune(ctx, d, s.HistoryRetention)
			return err
		})
	}
}

// Validate checks what the tags cannot: the URLs, the log level and the
// internal secret's length; it trims IdentityURL's trailing slash.
func (s *Settings) Validate() error {
	s.IdentityURL = strings.TrimRight(s.IdentityURL, "/")
	errs := []error{s.Common.Validate(), config.CheckURL("IDENTITY_URL", s.IdentityURL)}
	if s.InternalSecret != "" && auth.CheckInternalSecret(s.InternalSecret) != nil {
		errs = append(errs, errors.New("CRM_INTERNAL_SECRET: must be at least 16 characters"))
	}
	return errors.Join(errs...)
}

// Defaults are the settings before the environment is read, listening on
// addr: set them on a service's configuration struct, then config.Parse.
func Defaults(addr string) Settings { return Settings{Common: config.Common{Addr: addr}} }

// Runtime is a service's shared infrastructure.
type Runtime struct {
	Log      *slog.Logger
	DB       *db.DB
	Redis    *redis.Client
	Verifier *auth.Verifier
	Ops      *httpx.Ops

	stopTracing func(context.Context) error
}

// Open sets the default logger and tracing (pkg/tracing: spans of HTTP,
// SQL and Redis calls, exported only when configured), connects to the database confined to
// schema and applies migrate, connects to Redis, and prepares JWT
// verification against identity's JWKS and the ops endpoints. Readiness
// needs PostgreSQL only: Redis is reported (/readyz body, dependency_up)
// but optional, since these services answer requests without it (events
// wait in the outbox, rate limits fail open, a Redis-backed feature fails
// alone) and every replica shares it, so failing readiness on a Redis blip
// would take the whole API offline for nothing. The metrics include the
// pool's statistics and, when the schema has an outbox, its lag. Close
// releases it all.
func Open(ctx context.Context, service, schema string, s Settings, migrate func(context.Context, *db.DB) error, opts ...Option) (*Runtime, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	rt, err := Observe(ctx, service, s.LogLevel, s.Tracing)
	if err != nil {
		return nil, err
	}
	var tracked atomic.Bool // whether the schema holds record history, known once migrated
	if rt.DB, err = db.Open(ctx, s.DatabaseURL, schema, int32(s.DBMaxConns), history.SessionIf(tracked.Load)); err != nil {
		return nil, err
	}
	if err := migrate(ctx, rt.DB); err != nil {
		rt.Close()
		return nil, err
	}
	ok, err := history.Tracked(ctx, rt.DB)
	if err != nil {
		rt.Close()
		return nil, fmt.Errorf("look up record history: %w", err)
	}
	tracked.Store(ok)
	opt, err := redis.ParseURL(s.RedisURL)
	if err != nil {
		rt.Close()
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	rt.Redis = redis.NewClient(opt)
	tracing.Redis(rt.Redis)
	if !o.issuer {
		if rt.Verifier, err = jwksVerifier(rt, s.IdentityURL); err != nil {
			rt.Close()
			return nil, err
		}
	}
	rt.Ops, err = httpx.NewOps(
		httpx.Check{Name: "postgres", Fn: rt.DB.Ping},
		httpx.Check{Name: "redis", Fn: func(ctx context.Context) error { return rt.Redis.Ping(ctx).Err() }, Optional: true},
	)
	if err != nil {
		rt.Close()
		return nil, err
	}
	if err := rt.registerMetrics(ctx); err != nil {
		rt.Close()
		return nil, err
	}
	return rt, nil
}

// jwksVerifier checks access tokens against identity's JWKS and its
// revocations.
func jwksVerifier(rt *Runtime, identityURL string) (*auth.Verifier, error) {
	revocations, err := auth.NewRevocations(rt.Redis, rt.Log)
	if err != nil {
		return nil, err
	}
	return auth.NewVerifier(auth.NewJWKS(identityURL+"/auth/jwks"), auth.Issuer, auth.Audience,
		auth.WithRevocations(revocations))
}

// Option adjusts Open.
type Option func(*options)

type options struct{ issuer bool }

// Issuer is Open's option for the service that signs the access tokens
// (identity): it verifies them with its own keys, not with a JWKS fetched
// from itself, so Open leaves Runtime.Verifier nil.
func Issuer() Option { return func(o *options) { o.issuer = true } }

// Observe sets the default logger of service and starts tracing: the part
// of Open a process without a database or JWT verification (the render
// worker) shares. Close flushes the spans.
func Observe(ctx context.Context, service, logLevel string, tr tracing.Config) (*Runtime, error) {
	rt := &Runtime{Log: logx.New(os.Stdout, service, logLevel)}
	slog.SetDefault(rt.Log)
	var err error
	if rt.stopTracing, err = tracing.Setup(ctx, service, tr); err != nil {
		return nil, err
	}
	return rt, nil
}

// registerMetrics adds the pool statistics and, when the service keeps an
// outbox, its lag.
func (rt *Runtime) registerMetrics(ctx context.Context) error {
	if err := rt.Ops.Registry.Register(db.NewPoolCollector(rt.DB)); err != nil {
		return err
	}
	var hasOutbox bool
	if err := rt.DB.QueryRow(ctx, `SELECT to_regclass('outbox') IS NOT NULL`).Scan(&hasOutbox); err != nil {
		return fmt.Errorf("look up the outbox: %w", err)
	}
	if hasOutbox {
		return rt.Ops.Registry.Register(outbox.NewLagCollector(rt.DB))
	}
	return nil
}

// Close releases the connections and flushes the spans not exported yet.
func (rt *Runtime) Close() {
	if rt.stopTracing != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := rt.stopTracing(ctx); err != nil {
			rt.Log.Warn("flushing traces failed", "error", err.Error())
		}
	}
	if rt.Redis != nil {
		_ = rt.Redis.Close()
	}
	if rt.DB != nil {
		rt.DB.Close()
	}
}

// Every runs fn each interval until ctx ends; a failure is logged as a
// warning naming what, and the next tick tries again. Several replicas
// running the same maintenance at once must be harmless.
func Every(ctx context.Context, interval time.Duration, log *slog.Logger, what string, fn func(context.Context) error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			log.Warn(what+" failed", "error", err.Error())
		}
	}
}

// Background runs each fn in its own goroutine on a child of ctx and returns
// stop, which cancels that child and waits until every fn has returned. A
// service calls stop once its server has drained (usually deferred after
// Open), so its loops end before the connections they use are closed, and
// end also when the server failed while ctx still runs.
func Background(ctx context.Context, fns ...func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(ctx)
		}()
	}
	return func() {
		cancel()
		wg.Wait()
	}
}
