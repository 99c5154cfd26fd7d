// Command intake serves the public lead-intake API (intakeapi.SubmitLead) with
// an API key, a durable submission log, forwarding to leads with retries,
// and the admin view of the log.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	pkgconfig "github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/gogc"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/services/intake/internal/api"
	"github.com/opencrm/crm/services/intake/internal/apikey"
	"github.com/opencrm/crm/services/intake/internal/intake"
	"github.com/opencrm/crm/services/intake/internal/ratelimit"
	"github.com/opencrm/crm/services/intake/internal/store"
)

func main() {
	gogc.Default()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "intake:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	s, err := load(pkgconfig.Parse)
	if err != nil {
		return err
	}
	rt, err := platform.Open(ctx, "intake", store.Schema, s.Settings, store.Migrate)
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
	priv, err := store.NewPrivacy(d)
	if err != nil {
		return err
	}
	h, err := api.New(api.Deps{
		Service: svc, Store: st, Keys: keys, Limiter: limiter, Verifier: rt.Verifier,
		CORSOrigins: s.CORSOrigins, Log: log,
		Privacy: api.Privacy{InternalSecret: s.InternalSecret, DB: d, Part: priv},
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
