// Command intake serves the public lead-intake API (intakeapi.SubmitLead) with
// an API key, a durable submission log, forwarding to leads with retries,
// and the admin view of the log.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	pkgconfig "github.com/opencrm/crm/pkg/config"
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

// config is the process configuration, read once from the environment.
type config struct {
	platform.Settings
	LeadsURL string `env:"LEADS_URL" envDefault:"http://localhost:8083"`
	// CORSList is CRM_CORS_ORIGINS as set, comma-separated; Validate
	// splits it into CORSOrigins.
	CORSList    string `env:"CRM_CORS_ORIGINS"`
	CORSOrigins []string
	KeyCacheTTL time.Duration `env:"INTAKE_KEY_CACHE_TTL" min:"0s"`
	Intake      intake.Config
}

// Validate holds the rules across fields, after the platform's settings
// (intake.Config checks its own).
func (c *config) Validate() error {
	errs := []error{c.Settings.Validate(), pkgconfig.CheckURL("LEADS_URL", c.LeadsURL)}
	c.LeadsURL = strings.TrimRight(c.LeadsURL, "/")
	c.CORSOrigins = nil
	for _, o := range strings.Split(c.CORSList, ",") {
		if o = strings.TrimSpace(o); o != "" {
			c.CORSOrigins = append(c.CORSOrigins, o)
		}
	}
	if c.KeyCacheTTL > apikey.MaxTTL {
		errs = append(errs, errors.New("INTAKE_KEY_CACHE_TTL: must be at most 5s (revoked keys are refused within 5 s)"))
	}
	return errors.Join(errs...)
}

// load reads the configuration with parse (pkgconfig.Parse, or ParseMap
// in tests) over the defaults. Without DB_MAX_CONNS the pool has 20
// connections: sustained intake at 16 clients needs more than pgx's
// default.
func load(parse func(any) error) (config, error) {
	c := config{Settings: platform.Defaults(":8086"), KeyCacheTTL: apikey.MaxTTL, Intake: intake.DefaultConfig()}
	if err := parse(&c); err != nil {
		return c, err
	}
	if c.DBMaxConns == 0 {
		c.DBMaxConns = 20
	}
	return c, nil
}

func run(ctx context.Context) error {
	s, err := load(pkgconfig.Parse)
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
