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
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/netguard"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/pkg/sealbox"
	"github.com/opencrm/crm/services/webhooks/internal/api"
	"github.com/opencrm/crm/services/webhooks/internal/delivery"
	"github.com/opencrm/crm/services/webhooks/internal/ingest"
	"github.com/opencrm/crm/services/webhooks/internal/store"
	"github.com/opencrm/crm/services/webhooks/internal/webhooks"
	"github.com/opencrm/crm/services/webhooks/migrations"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "webhooks:", err)
		os.Exit(1)
	}
}

// SecretPurpose is the sealbox purpose of signing secrets.
const SecretPurpose = "opencrm/webhooks/signing-secret/v1"

// settings is the process configuration, read once from the environment.
type settings struct {
	platform.Settings
	SecretKey    string
	AllowHTTP    bool
	BlockPrivate bool
	// Exempt (WEBHOOKS_ALLOWED_CIDRS) keeps blocking on but lets chosen
	// internal prefixes through, for receivers inside the operator's network.
	Exempt netguard.Exempt
	// ContactsURL is where the records of a CSV import are read.
	ContactsURL string
	Grace       time.Duration
	Retention   time.Duration
	// MaxPerOwner caps the subscriptions of one owner (a user or a token).
	MaxPerOwner int
	Delivery    delivery.Config
}

func load(l *config.Loader) (settings, error) {
	s := settings{
		Settings:     platform.Load(l, ":8089"),
		SecretKey:    l.Required("CRM_SECRET_KEY"),
		AllowHTTP:    l.Bool("WEBHOOKS_ALLOW_HTTP", false),
		BlockPrivate: l.Bool("WEBHOOKS_BLOCK_PRIVATE", true),
		Grace:        l.Duration("WEBHOOKS_ROTATION_GRACE", 24*time.Hour),
		Retention:    l.Duration("WEBHOOKS_RETENTION", 30*24*time.Hour),
		MaxPerOwner:  l.Int("WEBHOOKS_MAX_PER_OWNER", api.DefaultMaxPerOwner, 1, 10000),
		ContactsURL:  strings.TrimRight(l.URL("CONTACTS_URL", "http://localhost:8082"), "/"),
	}
	exempt, err := netguard.ParseExempt(l.String("WEBHOOKS_ALLOWED_CIDRS", ""))
	l.Check(err == nil, "WEBHOOKS_ALLOWED_CIDRS", fmt.Sprint(err))
	s.Exempt = exempt
	if s.SecretKey != "" {
		l.Check(len(s.SecretKey) >= sealbox.MinSecret, "CRM_SECRET_KEY", "must be at least 16 characters")
	}
	s.Delivery = delivery.Config{
		Queue:        l.String("WEBHOOKS_QUEUE", "webhooks"),
		Workers:      l.Int("WEBHOOKS_WORKERS", 20, 1, 1000),
		PerEndpoint:  l.Int("WEBHOOKS_PER_ENDPOINT", 4, 1, 100),
		Batch:        l.Int("WEBHOOKS_BATCH", 100, 1, 1000),
		Timeout:      l.Duration("WEBHOOKS_TIMEOUT", 10*time.Second),
		MaxAge:       l.Duration("WEBHOOKS_MAX_AGE", 72*time.Hour),
		StaleAfter:   l.Duration("WEBHOOKS_STALE_AFTER", 2*time.Minute),
		AllowPrivate: !s.BlockPrivate,
		Exempt:       s.Exempt,
	}
	l.Check(s.Delivery.Timeout > 0 && s.Delivery.Timeout <= time.Minute, "WEBHOOKS_TIMEOUT", "must be between 1ms and 1m")
	l.Check(s.Delivery.StaleAfter > s.Delivery.Timeout, "WEBHOOKS_STALE_AFTER", "must be longer than WEBHOOKS_TIMEOUT")
	l.Check(s.Grace > 0, "WEBHOOKS_ROTATION_GRACE", "must be positive")
	l.Check(s.Retention >= 24*time.Hour, "WEBHOOKS_RETENTION", "must be at least 24h")
	if s.DBMaxConns == 0 {
		s.DBMaxConns = s.Delivery.Workers + 10
	}
	return s, l.Err()
}

func run(ctx context.Context) error {
	s, err := load(config.New())
	if err != nil {
		return err
	}
	rt, err := platform.Open(ctx, "webhooks", "webhooks", s.Settings, func(ctx context.Context, d *db.DB) error {
		return db.Migrate(ctx, d, "webhooks", migrations.FS)
	})
	if err != nil {
		return err
	}
	defer rt.Close()
	log, d, rdb, ops := rt.Log, rt.DB, rt.Redis, rt.Ops

	box, err := sealbox.New(s.SecretKey, SecretPurpose)
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
	if err := rt.ExportQueues(s.Delivery.Queue); err != nil {
		return err
	}
	ropt, err := redis.ParseURL(s.RedisURL)
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	engine, err := delivery.New(st, rdb, redisConn{ropt}, box, metrics, s.Delivery, log)
	if err != nil {
		return err
	}
	in, err := ingest.New(st, contactsapi.New(s.ContactsURL, s.InternalSecret), engine.Wake)
	if err != nil {
		return err
	}
	owners, err := ingest.NewOwners(st, log)
	if err != nil {
		return err
	}
	h, err := api.New(api.Deps{
		Store: st, Pinger: engine, Sealer: box, Verifier: rt.Verifier, Grace: s.Grace, MaxPerOwner: s.MaxPerOwner,
		Policy: webhooks.URLPolicy{AllowHTTP: s.AllowHTTP, AllowPrivate: !s.BlockPrivate, Exempt: s.Exempt},
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
				return st.Retention(ctx, s.Retention)
			})
		},
		func(ctx context.Context) {
			platform.Every(ctx, time.Hour, log, "webhook secret fingerprints", backfill)
		},
		owners.Consumer(rdb, directory.Stream, outbox.ConsumerName()).Run,
	}
	for _, c := range in.Consumers(rdb, outbox.ConsumerName(), log) {
		jobs = append(jobs, c.Run)
	}
	// The loops stop after the server has drained, so no answered change
	// is left half-done.
	stopJobs := platform.Background(context.WithoutCancel(ctx), jobs...)
	defer stopJobs()
	log.Info("webhooks listening", "addr", s.Addr)
	return httpx.Serve(ctx, s.Addr, ops.Handler(h), s.Shutdown, nil)
}

// redisConn makes asynq open (and later close) its own client from
// REDIS_URL: asynq closes the client it is given on shutdown.
type redisConn struct{ opt *redis.Options }

func (c redisConn) MakeRedisClient() any { return redis.NewClient(c.opt) }
