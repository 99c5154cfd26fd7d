// Command leads serves the leads context: lead CRUD, lists, notes and
// tasks, the qualification saga, lead CSV and /internal/leads.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
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
	"github.com/opencrm/crm/services/leads/internal/api"
	"github.com/opencrm/crm/services/leads/internal/csvio"
	"github.com/opencrm/crm/services/leads/internal/leads"
	"github.com/opencrm/crm/services/leads/internal/store"
	"github.com/opencrm/crm/services/leads/internal/upstream"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "leads:", err)
		os.Exit(1)
	}
}

// settings is the process configuration, read once from the environment
// (docs/architecture.md).
type settings struct {
	config.Common
	IdentityURL    string
	ContactsURL    string
	DealsURL       string
	InternalSecret string
	DBMaxConns     int
}

func load() (settings, error) {
	l := config.New()
	s := settings{
		Common:         l.LoadCommon(":8083"),
		IdentityURL:    l.URL("IDENTITY_URL", "http://localhost:8081"),
		ContactsURL:    l.URL("CONTACTS_URL", "http://localhost:8082"),
		DealsURL:       l.URL("DEALS_URL", "http://localhost:8084"),
		InternalSecret: l.Required("CRM_INTERNAL_SECRET"),
		DBMaxConns:     l.Int("DB_MAX_CONNS", 0, 0, 1000),
	}
	if s.InternalSecret != "" {
		err := auth.CheckInternalSecret(s.InternalSecret)
		l.Check(err == nil, "CRM_INTERNAL_SECRET", "must be at least 16 characters")
	}
	return s, l.Err()
}

func run(ctx context.Context) error {
	s, err := load()
	if err != nil {
		return err
	}
	log := logx.New(os.Stdout, "leads", s.LogLevel)
	slog.SetDefault(log)

	d, err := db.Open(ctx, s.DatabaseURL, "leads", int32(s.DBMaxConns))
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

	st := store.New(d)
	svc, err := leads.NewService(st,
		upstream.NewContacts(s.ContactsURL, s.InternalSecret),
		upstream.NewDeals(s.DealsURL, s.InternalSecret))
	if err != nil {
		return err
	}
	verifier, err := auth.NewVerifier(auth.NewJWKS(s.IdentityURL+"/auth/jwks"), auth.Issuer, auth.Audience)
	if err != nil {
		return err
	}
	csv, err := csvio.New(d, st)
	if err != nil {
		return err
	}
	h, err := api.New(api.Config{Service: svc, DB: d, Verifier: verifier, InternalSecret: s.InternalSecret, CSV: csv})
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

	host, _ := os.Hostname()
	go syncDirectory(ctx, log, st, d, s)
	go (&outbox.Relay{DB: d, Redis: rdb, Log: log}).Run(ctx)
	go (&outbox.Consumer{
		Redis: rdb, Stream: directory.Stream, Group: "leads",
		Name: host + "-" + strconv.Itoa(os.Getpid()), Handle: st.IdentityHandler(), Log: log,
	}).Run(ctx)
	go purgeKeys(ctx, log, d)

	log.Info("leads listening", "addr", s.Addr)
	return httpx.Serve(ctx, s.Addr, ops.Handler(h), nil)
}

// syncDirectory loads identity's user snapshot, retrying with backoff until
// identity answers, then refreshes every denormalised assignee name so
// renames missed while this service was down are applied.
func syncDirectory(ctx context.Context, log *slog.Logger, st *store.Store, d *db.DB, s settings) {
	wait := time.Second
	for ctx.Err() == nil {
		n, err := sync(ctx, st, d, s)
		if err == nil {
			log.Info("directory synced", "renamed_leads", n)
			return
		}
		log.Warn("directory sync failed; retrying", "error", err.Error(), "in", wait.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, time.Minute)
	}
}

func sync(ctx context.Context, st *store.Store, d *db.DB, s settings) (int64, error) {
	if err := directory.Sync(ctx, d, s.IdentityURL, s.InternalSecret); err != nil {
		return 0, err
	}
	return st.RefreshAssigneeNames(ctx, nil)
}

// purgeKeys drops stored idempotent answers after a day.
func purgeKeys(ctx context.Context, log *slog.Logger, d *db.DB) {
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
