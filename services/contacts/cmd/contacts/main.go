// Command contacts serves the contacts context: contacts, companies, their
// notes and tasks, contact CSV import/export and the internal API other
// contexts call.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	pkgconfig "github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/gogc"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/services/contacts/internal/api"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
	"github.com/opencrm/crm/services/contacts/internal/store"
)

func main() {
	gogc.Default()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "contacts:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	s, err := load(pkgconfig.Parse)
	if err != nil {
		return err
	}
	rt, err := platform.Open(ctx, "contacts", store.Schema, s.Settings, store.Migrate)
	if err != nil {
		return err
	}
	defer rt.Close()
	log, d, rdb := rt.Log, rt.DB, rt.Redis

	users, err := directory.NewUsers(d, identityapi.New(s.IdentityURL, s.InternalSecret))
	if err != nil {
		return err
	}
	st, err := store.New(d, users)
	if err != nil {
		return err
	}
	svc, err := contacts.NewService(st)
	if err != nil {
		return err
	}
	store.SetPhoneRegion(s.PhoneRegion)
	merger, err := contacts.NewMerger(st, svc, contacts.MergeConfig{Log: log,
		RetryBase: s.MergeRetryBase, RetryMax: s.MergeRetryMax, Interval: s.MergeInterval,
		Movers: map[string]contacts.Mover{
			"deals": mergeapi.New("deals", s.DealsURL, s.InternalSecret),
			"leads": mergeapi.New("leads", s.LeadsURL, s.InternalSecret),
			"mail":  mergeapi.New("mail", s.MailURL, s.InternalSecret),
		}})
	if err != nil {
		return err
	}
	h, err := api.New(api.Config{Service: svc, DB: d, Verifier: rt.Verifier, InternalSecret: s.InternalSecret,
		Deals: dealsapi.New(s.DealsURL, s.InternalSecret), Merger: merger})
	if err != nil {
		return err
	}
	stop := platform.Background(ctx,
		(&outbox.Relay{DB: d, Redis: rdb, Log: log}).Run,
		(&outbox.Consumer{Redis: rdb, Stream: directory.Stream, Group: "contacts",
			Name: outbox.ConsumerName(), Handle: directory.Handle(d), Log: log}).Run,
		func(ctx context.Context) { directory.SyncWithRetry(ctx, d, s.IdentityURL, s.InternalSecret, log) },
		func(ctx context.Context) { idempotency.PurgeEvery(ctx, d, time.Hour, 24*time.Hour, log) },
		s.PruneHistory(d, log),
		func(ctx context.Context) {
			platform.Every(ctx, time.Minute, log, "contact counter compaction", st.CompactCounts)
		},
		// Phone numbers of contacts written before migration 012 (or by
		// a path that left them pending), then every minute.
		func(ctx context.Context) { st.BackfillPhonesEvery(ctx, time.Minute) },
		// Merges whose mover failed complete here.
		merger.Run,
	)
	defer stop()

	log.Info("contacts listening", "addr", s.Addr)
	return httpx.Serve(ctx, s.Addr, rt.Ops.Handler(h), s.Shutdown, nil)
}
