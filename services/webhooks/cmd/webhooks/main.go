// Command webhooks serves the webhooks context: subscriptions, signed
// deliveries with retries and their log, and the events feed. Every
// replica runs the API, the stream consumers, the dispatcher and the
// delivery workers, so more replicas deliver more.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	pkgconfig "github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/gogc"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/pkg/sealbox"
	"github.com/opencrm/crm/services/webhooks/internal/api"
	"github.com/opencrm/crm/services/webhooks/internal/delivery"
	"github.com/opencrm/crm/services/webhooks/internal/ingest"
	"github.com/opencrm/crm/services/webhooks/internal/store"
	"github.com/opencrm/crm/services/webhooks/internal/webhooks"
)

func main() {
	gogc.Default()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "webhooks:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	c, err := load(pkgconfig.Parse)
	if err != nil {
		return err
	}
	rt, err := platform.Open(ctx, "webhooks", "webhooks", c.Settings, func(ctx context.Context, d *db.DB) error {
		// The schema, the outbox (the audit entries of subscription
		// changes) and the idempotency keys (privacy erasures).
		return store.Migrate(ctx, d)
	})
	if err != nil {
		return err
	}
	defer rt.Close()
	log, d, rdb, ops := rt.Log, rt.DB, rt.Redis, rt.Ops

	box, err := sealbox.New(c.SecretKey, SecretPurpose)
	if err != nil {
		return err
	}
	st, err := store.New(d)
	if err != nil {
		return err
	}
	metrics, err := delivery.NewMetrics(ops.Registry, d)
	if err != nil {
		return err
	}
	if err := rt.ExportQueues(c.Delivery.Queue); err != nil {
		return err
	}
	ropt, err := redis.ParseURL(c.RedisURL)
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	engine, err := delivery.New(st, rdb, delivery.OwnRedis(ropt), box, metrics, c.Delivery, log)
	if err != nil {
		return err
	}
	in, err := ingest.New(st, contactsapi.New(c.ContactsURL.String(), c.InternalSecret), engine.Wake)
	if err != nil {
		return err
	}
	owners, err := ingest.NewOwners(st, log)
	if err != nil {
		return err
	}
	h, err := api.New(api.Deps{
		Store: st, Pinger: engine, Sealer: box, Verifier: rt.Verifier, Grace: c.Grace, MaxPerOwner: c.MaxPerOwner,
		InternalSecret: c.InternalSecret,
		Policy:         webhooks.URLPolicy{AllowHTTP: c.AllowHTTP, AllowPrivate: !c.BlockPrivate, Exempt: c.exempt},
	})
	if err != nil {
		return err
	}
	// Subscriptions made by an earlier version show a fingerprint instead
	// of the start of their secret; an error only delays it (it runs again
	// hourly, for rows an older replica writes during an upgrade).
	backfill := func(ctx context.Context) error {
		filled, failed, err := st.BackfillFingerprints(ctx, box.Open)
		if filled > 0 || failed > 0 {
			log.Info("webhook secret fingerprints computed", "filled", filled, "unopenable", failed)
		}
		return err
	}
	if err := backfill(ctx); err != nil {
		log.Warn("webhook secret fingerprints not computed", "error", err.Error())
	}

	jobs := []func(context.Context){
		engine.RunDispatcher, engine.RunSweeper,
		func(ctx context.Context) {
			if err := engine.RunWorkers(ctx); err != nil {
				log.Error("webhook workers stopped", "error", err.Error())
			}
		},
		func(ctx context.Context) {
			platform.Every(ctx, time.Hour, log, "webhooks retention", func(ctx context.Context) error {
				return st.Retention(ctx, c.Retention)
			})
		},
		func(ctx context.Context) {
			platform.Every(ctx, time.Hour, log, "webhook secret fingerprints", backfill)
		},
		owners.Consumer(rdb, directory.Stream, outbox.ConsumerName()).Run,
		(&outbox.Relay{DB: d, Redis: rdb, Log: log}).Run,
		// A privacy erasure's stored part (its request's hash, its counts)
		// goes after a day, as in the other contexts.
		func(ctx context.Context) { idempotency.PurgeEvery(ctx, d, time.Hour, 24*time.Hour, log) },
	}
	for _, c := range in.Consumers(rdb, outbox.ConsumerName(), log) {
		jobs = append(jobs, c.Run)
	}
	// The loops stop after the server has drained, so no answered change
	// is left half-done.
	stopJobs := platform.Background(context.WithoutCancel(ctx), jobs...)
	defer stopJobs()
	log.Info("webhooks listening", "addr", c.Addr)
	return httpx.Serve(ctx, c.Addr, ops.Handler(h), c.Shutdown, nil)
}
