// Command intake serves the public lead-intake API: POST /public/leads with
// an API key, a durable submission log, forwarding to leads with retries,
// and the admin view of the log.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/services/intake/internal/api"
	"github.com/opencrm/crm/services/intake/internal/apikey"
	"github.com/opencrm/crm/services/intake/internal/intake"
	"github.com/opencrm/crm/services/intake/internal/ratelimit"
	"github.com/opencrm/crm/services/intake/internal/store"
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
	platform.Settings
	LeadsURL    string
	CORSOrigins []string
	KeyCacheTTL time.Duration
	Intake      intake.Config
}

func load() (settings, error) {
	l := config.New()
	s := settings{
		Settings:    platform.Load(l, ":8086"),
		LeadsURL:    strings.TrimRight(l.URL("LEADS_URL", "http://localhost:8083"), "/"),
		KeyCacheTTL: l.Duration("INTAKE_KEY_CACHE_TTL", apikey.MaxTTL),
	}
	if s.DBMaxConns == 0 {
		// Sustained intake at 16 clients needs more than pgx's default pool.
		s.DBMaxConns = 20
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
	// 50 is also the most leads' batch endpoint takes in one call.
	c.BatchSize = l.Int("INTAKE_BATCH_SIZE", c.BatchSize, 1, 50)
	c.Flushers = l.Int("INTAKE_FLUSHERS", c.Flushers, 1, 64)
	s.Intake = c
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
	rt, err := platform.Open(ctx, "intake", "intake", s.Settings, func(ctx context.Context, d *db.DB) error {
		return db.Migrate(ctx, d, "intake", migrations.FS)
	})
	if err != nil {
		return err
	}
	defer rt.Close()
	log, d, rdb, ops := rt.Log, rt.DB, rt.Redis, rt.Ops

	metrics, err := intake.NewMetrics(ops.Registry)
	if err != nil {
		return err
	}
	st, err := store.New(d, store.Options{IdemTTL: s.Intake.IdemTTL, Orphaned: s.Intake.Lease})
	if err != nil {
		return err
	}
	leads := leadsapi.New(s.LeadsURL, s.InternalSecret)
	keys, err := apikey.New(identityapi.New(s.IdentityURL, s.InternalSecret), s.KeyCacheTTL)
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
		Service: svc, Store: st, Keys: keys, Limiter: limiter, Verifier: rt.Verifier,
		CORSOrigins: s.CORSOrigins, Log: log,
	})
	if err != nil {
		return err
	}

	// The retry job and the finisher stop after the server has drained
	// (also when the server fails), so no answered outcome is left behind.
	stopJobs := platform.Background(context.WithoutCancel(ctx), svc.RunRetries, svc.RunFinisher)
	defer stopJobs()
	log.Info("intake listening", "addr", s.Addr)
	return httpx.Serve(ctx, s.Addr, ops.Handler(h), s.Shutdown, nil)
}
