// Command mail serves synced email messages, their links to contacts and
// leads, and the IMAP mailboxes they are synced from; it also runs the
// mailbox sync worker and scheduler.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/gogc"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/services/mail/internal/api"
	"github.com/opencrm/crm/services/mail/internal/imapsync"
	"github.com/opencrm/crm/services/mail/internal/jobs"
	"github.com/opencrm/crm/services/mail/internal/mail"
	"github.com/opencrm/crm/services/mail/internal/store"
)

func main() {
	gogc.Default()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "mail:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	s := defaults()
	if err := config.Parse(&s); err != nil {
		return err
	}
	rt, err := platform.Open(ctx, "mail", "mail", s.Settings, func(ctx context.Context, d *db.DB) error {
		return store.Migrate(ctx, d)
	})
	if err != nil {
		return err
	}
	defer rt.Close()
	log, d, rdb := rt.Log, rt.DB, rt.Redis

	st, err := store.New(d)
	if err != nil {
		return err
	}
	var (
		sealer *mail.Sealer
		queue  *jobs.Queue
		runner *jobs.Runner
	)
	if s.SecretKey == "" {
		log.Warn("CRM_SECRET_KEY is not set: mailboxes are disabled (503) and nothing is synced")
	} else {
		if sealer, err = mail.NewSealer(s.SecretKey); err != nil {
			return err
		}
		if queue, err = jobs.NewQueue(rdb, s.Jobs); err != nil {
			return err
		}
		// The sync skips a message a privacy erasure deleted.
		syncer, err := imapsync.New(st.ForSync(), sealer, s.Sync, log)
		if err != nil {
			return err
		}
		if s.SyncWorker {
			if runner, err = jobs.NewRunner(s.RedisURL, s.Jobs, queue, syncer, st, log); err != nil {
				return err
			}
			if err := rt.ExportQueues(s.Jobs.Queue); err != nil {
				return err
			}
		}
	}
	var sq mail.SyncQueue
	if queue != nil {
		sq = queue
	}
	svc, err := mail.NewService(st, contactsapi.New(s.ContactsURL, s.InternalSecret),
		leadsapi.New(s.LeadsURL, s.InternalSecret), sealer, sq)
	if err != nil {
		return err
	}
	h, err := api.New(api.Deps{Service: svc, Verifier: rt.Verifier,
		Privacy: &api.Privacy{Part: st, DB: d, InternalSecret: s.InternalSecret}})
	if err != nil {
		return err
	}

	// The sync worker stops with the server, also when the server fails. A
	// worker that cannot start (Redis down) is logged, not fatal: messages
	// and linked emails do not need it.
	stopJobs := platform.Background(ctx, func(ctx context.Context) {
		if runner == nil {
			return
		}
		if err := runner.Run(ctx); err != nil {
			log.Error("mailbox sync worker stopped", "error", err.Error())
		}
	})
	defer stopJobs()
	// A privacy erasure's stored part (its request's hash, its counts)
	// goes after a day, as in the other contexts.
	stopPurge := platform.Background(context.WithoutCancel(ctx), func(ctx context.Context) {
		idempotency.PurgeEvery(ctx, d, time.Hour, 24*time.Hour, log)
	})
	defer stopPurge()
	log.Info("mail listening", "addr", s.Addr)
	return httpx.Serve(ctx, s.Addr, rt.Ops.Handler(h), s.Shutdown, nil)
}
