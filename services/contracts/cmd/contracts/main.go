// Command contracts serves the contracts context: contract templates, the
// merge-tag catalogue, contracts with notes, tasks, documents and signed
// copies, and the daily expiry and renewal job; it publishes contract
// events on crm:events:contracts.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sync/errgroup"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/gogc"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/services/contracts/internal/api"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
	"github.com/opencrm/crm/services/contracts/internal/expiry"
	"github.com/opencrm/crm/services/contracts/internal/store"
)

func main() {
	gogc.Default()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "contracts:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	s, err := load()
	if err != nil {
		return err
	}
	rt, err := platform.Open(ctx, "contracts", store.Schema, s.Settings, store.Migrate)
	if err != nil {
		return err
	}
	defer rt.Close()
	log, d, rdb := rt.Log, rt.DB, rt.Redis

	renderer, err := renderq.NewClient(s.Render)
	if err != nil {
		return err
	}
	defer renderer.Close()

	st := store.New(d)
	svc, err := contracts.NewService(contracts.Deps{
		Store: st, Deals: dealsapi.New(s.DealsURL, s.InternalSecret), Renderer: renderer,
	})
	if err != nil {
		return err
	}
	users, err := directory.NewUsers(d, identityapi.New(s.IdentityURL, s.InternalSecret))
	if err != nil {
		return err
	}
	act, err := activity.New(activity.Config{
		DB: d, ParentType: activity.Contract, ParentName: "contract", ParentExists: svc.ContractExists,
		ParentWritable: svc.ContractWritable,
		UserExists:     users.Exists,
		References: activity.RemoteReferences(contactsapi.New(s.ContactsURL, s.InternalSecret),
			dealsapi.New(s.DealsURL, s.InternalSecret)),
	})
	if err != nil {
		return err
	}
	priv, err := store.NewPrivacy(d)
	if err != nil {
		return err
	}
	h, err := api.New(svc, rt.Verifier, act, d, api.Privacy{InternalSecret: s.InternalSecret, DB: d, Part: priv})
	if err != nil {
		return err
	}
	job, err := expiry.New(rdb, s.Expiry, svc, log)
	if err != nil {
		return err
	}
	if err := rt.ExportQueues(s.Expiry.Queue); err != nil {
		return err
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return job.Run(gctx) })
	// Record history older than CRM_HISTORY_RETENTION (none when 0).
	g.Go(func() error {
		s.PruneHistory(d, log)(gctx)
		return nil
	})
	// Task assignees are validated against the users read model.
	g.Go(func() error {
		directory.SyncWithRetry(gctx, d, s.IdentityURL, s.InternalSecret, log)
		return nil
	})
	// Contract events, written by the store in each change's transaction.
	g.Go(func() error {
		(&outbox.Relay{DB: d, Redis: rdb, Log: log}).Run(gctx)
		return nil
	})
	g.Go(func() error {
		(&outbox.Consumer{Redis: rdb, Stream: directory.Stream, Group: "contracts", Name: outbox.ConsumerName(),
			Handle: directory.Handle(d), Log: log}).Run(gctx)
		return nil
	})
	g.Go(func() error { return httpx.Serve(gctx, s.Addr, rt.Ops.Handler(h), s.Shutdown, nil) })
	log.Info("contracts listening", "addr", s.Addr)
	return g.Wait()
}
