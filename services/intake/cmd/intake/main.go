// Command intake serves the public lead-intake API: POST /public/leads with
// an API key, a durable submission log, forwarding to leads with retries,
// and the admin view of the log.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/logx"
	"github.com/opencrm/crm/pkg/svcclient"
	"github.com/opencrm/crm/services/intake/internal/api"
	"github.com/opencrm/crm/services/intake/internal/apikey"
	"github.com/opencrm/crm/services/intake/internal/intake"
	"github.com/opencrm/crm/services/intake/internal/ratelimit"
	"github.com/opencrm/crm/services/intake/internal/store"
	"github.com/opencrm/crm/services/intake/internal/upstream"
	"github.com/opencrm/crm/services/intake/migrations"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "intake:", err)
		os.Exit(1)
	}
}

// settings is the process configuration, read once from the environment.
type settings struct {
	config.Common
	IdentityURL    string
	LeadsURL       string
	InternalSecret string
	CORSOrigins    []string
	KeyCacheTTL    time.Duration
	DBMaxConns     int
	Intake         intake.Config
}

func load() (settings, error) {
	l := config.New()
	s := settings{
		Common:         l.LoadCommon(":8086"),
		IdentityURL:    strings.TrimRight(l.URL("IDENTITY_URL", "http://localhost:8081"), "/"),
		LeadsURL:       strings.TrimRight(l.URL("LEADS_URL", "http://localhost:8083"), "/"),
		InternalSecret: l.Required("CRM_INTERNAL_SECRET"),
		KeyCacheTTL:    l.Duration("INTAKE_KEY_CACHE_TTL", apikey.MaxTTL),
		DBMaxConns:     l.Int("INTAKE_DB_MAX_CONNS", 20, 2, 500),
	}
	for _, o := range strings.Split(l.String("CRM_CORS_ORIGINS", ""), ",") {
		if o = strings.TrimSpace(o); o != "" {
			s.CORSOrigins = append(s.CORSOrigins, o)
		}
	}
	c := intake.DefaultConfig()
	c.ForwardTimeout = l.Duration("INTAKE_FORWARD_TIMEOUT", c.ForwardTimeout)
	c.Lease = l.Duration("INTAKE_RETRY_LEASE", c.Lease)
	c.RetryInterval = l.Duration("INTAKE_RETRY_INTERVAL", c.RetryInterval)
	c.RetryBase = l.Duration("INTAKE_RETRY_BASE", c.RetryBase)
	c.RetryMax = l.Duration("INTAKE_RETRY_MAX", c.RetryMax)
	c.MaxAttempts = l.Int("INTAKE_RETRY_MAX_ATTEMPTS", c.MaxAttempts, 1, 1_000_000)
	s.Intake = c
	if s.InternalSecret != "" {
		if err := auth.CheckInternalSecret(s.InternalSecret); err != nil {
			l.Check(false, "CRM_INTERNAL_SECRET", err.Error())
		}
	}
	l.Check(s.KeyCacheTTL <= apikey.MaxTTL, "INTAKE_KEY_CACHE_TTL", "must be at most 5s (revoked keys are refused within 5 s)")
	l.Check(c.Lease > c.ForwardTimeout, "INTAKE_RETRY_LEASE", "must be longer than INTAKE_FORWARD_TIMEOUT")
	l.Check(c.RetryInterval > 0 && c.RetryBase > 0, "INTAKE_RETRY_INTERVAL", "INTAKE_RETRY_INTERVAL and INTAKE_RETRY_BASE must be positive")
	l.Check(c.RetryMax >= c.RetryBase, "INTAKE_RETRY_MAX", "must be at least INTAKE_RETRY_BASE")
	return s, l.Err()
}

func run(ctx context.Context) error {
	s, err := load()
	if err != nil {
		return err
	}
	log := logx.New(os.Stdout, "intake", s.LogLevel)
	slog.SetDefault(log)

	d, err := db.Open(ctx, s.DatabaseURL, "intake", int32(s.DBMaxConns))
	if err != nil {
		return err
	}
	defer d.Close()
	if err := db.Migrate(ctx, d, "intake", migrations.FS); err != nil {
		return err
	}

	ropt, err := redis.ParseURL(s.RedisURL)
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	rdb := redis.NewClient(ropt)
	defer rdb.Close()

	verifier, err := auth.NewVerifier(auth.NewJWKS(s.IdentityURL+"/auth/jwks"), auth.Issuer, auth.Audience)
	if err != nil {
		return err
	}
	ops, err := httpx.NewOps(
		httpx.Check{Name: "postgres", Fn: d.Ping},
		httpx.Check{Name: "redis", Fn: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
	)
	if err != nil {
		return err
	}
	metrics, err := intake.NewMetrics(ops.Registry)
	if err != nil {
		return err
	}
	st, err := store.New(d, store.Options{IdemTTL: s.Intake.IdemTTL, Orphaned: s.Intake.Lease})
	if err != nil {
		return err
	}
	leads, err := upstream.NewLeads(svcclient.New("leads", s.LeadsURL, s.InternalSecret))
	if err != nil {
		return err
	}
	keys, err := apikey.New(svcclient.New("identity", s.IdentityURL, s.InternalSecret), s.KeyCacheTTL)
	if err != nil {
		return err
	}
	limiter, err := ratelimit.New(rdb, "crm:intake:rl:")
	if err != nil {
		return err
	}
	svc, err := intake.NewService(st, leads, s.Intake, metrics, log)
	if err != nil {
		return err
	}
	h, err := api.New(api.Deps{
		Service: svc, Store: st, Keys: keys, Limiter: limiter, Verifier: verifier,
		CORSOrigins: s.CORSOrigins, Log: log,
	})
	if err != nil {
		return err
	}

	// The retry job and the finisher stop after the server has drained
	// (also when the server fails), so no answered outcome is left behind.
	jobCtx, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	retryDone, finisherDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(retryDone)
		svc.RunRetries(jobCtx)
	}()
	go func() {
		defer close(finisherDone)
		svc.RunFinisher(jobCtx)
	}()
	log.Info("intake listening", "addr", s.Addr)
	err = httpx.Serve(ctx, s.Addr, ops.Handler(h), nil)
	stopJobs()
	<-retryDone
	<-finisherDone
	return err
}
