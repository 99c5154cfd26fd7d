// Command contacts serves the contacts context: contacts, companies, their
// notes and tasks, contact CSV import/export and the internal API other
// contexts call.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/logx"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/contacts/internal/api"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
	"github.com/opencrm/crm/services/contacts/internal/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "contacts:", err)
		os.Exit(1)
	}
}

// settings is the process configuration (docs/architecture.md).
type settings struct {
	config.Common
	IdentityURL    string
	InternalSecret string
	DBMaxConns     int
}

func load() (settings, error) {
	l := config.New()
	s := settings{
		Common:         l.LoadCommon(":8082"),
		IdentityURL:    l.URL("IDENTITY_URL", "http://localhost:8081"),
		InternalSecret: l.Required("CRM_INTERNAL_SECRET"),
		DBMaxConns:     l.Int("DB_MAX_CONNS", 0, 0, 1000),
	}
	if s.InternalSecret != "" {
		if err := auth.CheckInternalSecret(s.InternalSecret); err != nil {
			l.Check(false, "CRM_INTERNAL_SECRET", err.Error())
		}
	}
	return s, l.Err()
}

func run(ctx context.Context) error {
	s, err := load()
	if err != nil {
		return err
	}
	log := logx.New(os.Stdout, "contacts", s.LogLevel)
	slog.SetDefault(log)

	d, err := db.Open(ctx, s.DatabaseURL, store.Schema, int32(s.DBMaxConns))
	if err != nil {
		return err
	}
	defer d.Close()
	if err := store.Migrate(ctx, d); err != nil {
		return err
	}
	opt, err := redis.ParseURL(s.RedisURL)
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()

	verifier, err := auth.NewVerifier(auth.NewJWKS(s.IdentityURL+"/auth/jwks"), auth.Issuer, auth.Audience)
	if err != nil {
		return err
	}
	st, err := store.New(d)
	if err != nil {
		return err
	}
	svc, err := contacts.NewService(st)
	if err != nil {
		return err
	}
	h, err := api.New(api.Config{Service: svc, DB: d, Verifier: verifier, InternalSecret: s.InternalSecret})
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

	var wg sync.WaitGroup
	bg := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	bg(func() { (&outbox.Relay{DB: d, Redis: rdb, Log: log}).Run(ctx) })
	host, _ := os.Hostname()
	bg(func() {
		(&outbox.Consumer{Redis: rdb, Stream: directory.Stream, Group: "contacts",
			Name: host + "-" + strconv.Itoa(os.Getpid()), Handle: directory.Handle(d), Log: log}).Run(ctx)
	})
	bg(func() { syncDirectory(ctx, d, s.IdentityURL, s.InternalSecret, log) })
	bg(func() { purgeKeys(ctx, d, log) })
	bg(func() { compactCounts(ctx, st, log) })

	log.Info("contacts listening", "addr", s.Addr)
	err = httpx.Serve(ctx, s.Addr, ops.Handler(h), nil)
	wg.Wait()
	return err
}

// syncDirectory loads identity's user snapshot, retrying in the background
// while identity is down so the service starts (and validates against the
// event-fed model) without waiting for it.
func syncDirectory(ctx context.Context, d *db.DB, identityURL, secret string, log *slog.Logger) {
	wait := time.Second
	for ctx.Err() == nil {
		err := directory.Sync(ctx, d, identityURL, secret)
		if err == nil {
			log.Info("directory synced from identity")
			return
		}
		log.Warn("directory sync failed; retrying", "error", err.Error(), "retry_in", wait.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, 30*time.Second)
	}
}

// purgeKeys drops idempotency keys older than a day, hourly.
func purgeKeys(ctx context.Context, d *db.DB, log *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if err := idempotency.Purge(ctx, d, 24*time.Hour); err != nil && ctx.Err() == nil {
			log.Warn("idempotency purge failed", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// compactCounts folds the list counters' per-statement deltas every minute
// (several replicas doing it at once is harmless), so reading a total
// stays a sum over a few rows.
func compactCounts(ctx context.Context, st *store.Store, log *slog.Logger) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := st.CompactCounts(ctx); err != nil && ctx.Err() == nil {
			log.Warn("contact counter compaction failed", "error", err.Error())
		}
	}
}
