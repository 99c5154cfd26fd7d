// Command leads serves the leads context: lead CRUD, lists, notes and
// tasks, the qualification saga, lead CSV and /internal/leads.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/opencrm/crm/pkg/activity"
	pkgconfig "github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/gogc"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/pkg/svcclient"
	"github.com/opencrm/crm/services/leads/internal/api"
	"github.com/opencrm/crm/services/leads/internal/leads"
	"github.com/opencrm/crm/services/leads/internal/store"
)

func main() {
	gogc.Default()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "leads:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	s, err := load(pkgconfig.Parse)
	if err != nil {
		return err
	}
	rt, err := platform.Open(ctx, "leads", "leads", s.Settings, store.Migrate)
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
	svc, err := leads.NewService(st, leads.Upstreams{
		Contacts:      contactsapi.New(s.ContactsURL, s.InternalSecret),
		Deals:         dealsapi.New(s.DealsURL, s.InternalSecret),
		ContactFields: propertyapi.NewClient(svcclient.New("contacts", s.ContactsURL, s.InternalSecret)),
		DealFields:    propertyapi.NewClient(svcclient.New("deals", s.DealsURL, s.InternalSecret)),
	})
	if err != nil {
		return err
	}
	csv, err := api.NewCSV(d, st)
	if err != nil {
		return err
	}
	refs := activity.RemoteReferences(contactsapi.New(s.ContactsURL, s.InternalSecret),
		dealsapi.New(s.DealsURL, s.InternalSecret))
	h, err := api.New(api.Config{Service: svc, DB: d, Verifier: rt.Verifier, InternalSecret: s.InternalSecret,
		CSV: csv, TaskReferences: refs})
	if err != nil {
		return err
	}
	stop := platform.Background(ctx,
		func(ctx context.Context) { syncDirectory(ctx, log, st, d, s) },
		(&outbox.Relay{DB: d, Redis: rdb, Log: log}).Run,
		(&outbox.Consumer{
			Redis: rdb, Stream: directory.Stream, Group: "leads",
			Name: outbox.ConsumerName(), Handle: st.IdentityHandler(), Log: log,
		}).Run,
		func(ctx context.Context) { idempotency.PurgeEvery(ctx, d, time.Hour, 24*time.Hour, log) },
		s.PruneHistory(d, log),
		func(ctx context.Context) {
			platform.Every(ctx, time.Minute, log, "lead counter compaction", st.CompactCounts)
		},
	)
	defer stop()

	log.Info("leads listening", "addr", s.Addr)
	return httpx.Serve(ctx, s.Addr, rt.Ops.Handler(h), s.Shutdown, nil)
}

// syncDirectory loads identity's user snapshot, retrying until identity
// answers, then refreshes every denormalised assignee name so renames
// missed while this service was down are applied.
func syncDirectory(ctx context.Context, log *slog.Logger, st *store.Store, d *db.DB, s config) {
	if !directory.SyncWithRetry(ctx, d, s.IdentityURL, s.InternalSecret, log) {
		return
	}
	n, err := st.RefreshAssigneeNames(ctx, nil)
	if err != nil {
		log.Error("refreshing assignee names failed", "error", err.Error())
		return
	}
	log.Info("assignee names refreshed", "renamed_leads", n)
}
