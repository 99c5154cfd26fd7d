// Command deals serves the deals context: deal stages, deals and quotes,
// plus the internal API lead qualification and contracts call.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/gogc"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/services/deals/internal/api"
	"github.com/opencrm/crm/services/deals/internal/deals"
	"github.com/opencrm/crm/services/deals/internal/store"
)

func main() {
	gogc.Default()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "deals:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := load()
	if err != nil {
		return err
	}
	rt, err := platform.Open(ctx, "deals", "deals", cfg.Settings, store.Migrate)
	if err != nil {
		return err
	}
	defer rt.Close()
	log, pool, rdb := rt.Log, rt.DB, rt.Redis

	users, err := directory.NewUsers(pool, identityapi.New(cfg.IdentityURL, cfg.InternalSecret))
	if err != nil {
		return err
	}
	st, err := store.New(pool, users)
	if err != nil {
		return err
	}
	svc, err := deals.NewService(st, contactsapi.New(cfg.ContactsURL, cfg.InternalSecret), leadsapi.New(cfg.LeadsURL, cfg.InternalSecret))
	if err != nil {
		return err
	}
	priv, err := store.NewPrivacy(pool)
	if err != nil {
		return err
	}
	h, err := api.New(api.Config{Service: svc, Verifier: rt.Verifier, InternalSecret: cfg.InternalSecret,
		Properties: customfield.Store{DB: pool, Stream: store.Stream}, DB: pool,
		Privacy: api.Privacy{DB: pool, Part: priv}})
	if err != nil {
		return err
	}

	name := outbox.ConsumerName()
	stop := platform.Background(ctx,
		(&outbox.Relay{DB: pool, Redis: rdb, Log: log}).Run,
		(&outbox.Consumer{Redis: rdb, Stream: directory.Stream, Group: "deals", Name: name,
			Handle: directory.Handle(pool), Log: log}).Run,
		(&outbox.Consumer{Redis: rdb, Stream: outbox.Stream("contacts"), Group: "deals", Name: name,
			Handle: st.HandleContactsEvent, Types: store.ContactsEventTypes, Log: log}).Run,
		func(ctx context.Context) {
			directory.SyncWithRetry(ctx, pool, cfg.IdentityURL, cfg.InternalSecret, log)
		},
		func(ctx context.Context) { idempotency.PurgeEvery(ctx, pool, time.Hour, 24*time.Hour, log) },
		// Record history older than CRM_HISTORY_RETENTION (none when 0).
		cfg.PruneHistory(pool, log),
	)
	defer stop()

	log.Info("deals listening", "addr", cfg.Addr)
	return httpx.Serve(ctx, cfg.Addr, rt.Ops.Handler(h), cfg.Shutdown, nil)
}
