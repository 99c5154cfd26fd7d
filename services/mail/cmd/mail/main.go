// Command mail serves synced email messages, their links to contacts and
// leads, and the IMAP mailboxes they are synced from; it also runs the
// mailbox sync worker and scheduler.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/services/mail/internal/api"
	"github.com/opencrm/crm/services/mail/internal/imapsync"
	"github.com/opencrm/crm/services/mail/internal/jobs"
	"github.com/opencrm/crm/services/mail/internal/mail"
	"github.com/opencrm/crm/services/mail/internal/store"
	"github.com/opencrm/crm/services/mail/migrations"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "mail:", err)
		os.Exit(1)
	}
}

// settings is the process configuration, read once from the environment.
type settings struct {
	platform.Settings
	ContactsURL string
	LeadsURL    string
	// SecretKey (CRM_SECRET_KEY) seals mailbox passwords; without it the
	// mailbox routes answer 503 and no sync runs.
	SecretKey string
	Jobs      jobs.Config
	Sync      imapsync.Options
	// SyncWorker turns the worker and scheduler off (MAIL_SYNC_WORKER=false)
	// for API-only replicas.
	SyncWorker bool
}

// load reads the settings from l (the environment in production).
func load(l *config.Loader) (settings, error) {
	s := settings{
		Settings:    platform.Load(l, ":8087"),
		ContactsURL: strings.TrimRight(l.URL("CONTACTS_URL", "http://localhost:8082"), "/"),
		LeadsURL:    strings.TrimRight(l.URL("LEADS_URL", "http://localhost:8083"), "/"),
		SecretKey:   l.String("CRM_SECRET_KEY", ""),
		SyncWorker:  l.Bool("MAIL_SYNC_WORKER", true),
		Jobs: jobs.Config{
			Queue:       l.String("MAIL_QUEUE", "mail"),
			Interval:    l.Duration("MAIL_SYNC_INTERVAL", 5*time.Minute),
			Concurrency: l.Int("MAIL_SYNC_CONCURRENCY", 4, 1, 64),
		},
		Sync: imapsync.Options{
			Lease: l.Duration("MAIL_SYNC_TIMEOUT", 10*time.Minute),
			// Secure by default: a user-chosen host must not reach the
			// cluster's own network unless the operator allows it.
			BlockPrivate: l.Bool("MAIL_IMAP_BLOCK_PRIVATE", true),
			// A mailbox with tls off on an implicit-TLS port gets no
			// greeting; its error should come while the user still looks.
			GreetingTimeout: l.Duration("MAIL_IMAP_GREETING_TIMEOUT", 8*time.Second),
		},
	}
	s.Jobs.TaskTimeout = s.Sync.Lease
	l.Check(s.SecretKey == "" || len(s.SecretKey) >= 16, "CRM_SECRET_KEY", "must be at least 16 characters")
	l.Check(s.Jobs.Interval >= time.Second, "MAIL_SYNC_INTERVAL", "must be at least 1s")
	l.Check(s.Sync.Lease >= 5*time.Second, "MAIL_SYNC_TIMEOUT", "must be at least 5s")
	l.Check(s.Sync.GreetingTimeout >= time.Second && s.Sync.GreetingTimeout < s.Sync.Lease,
		"MAIL_IMAP_GREETING_TIMEOUT", "must be at least 1s and less than MAIL_SYNC_TIMEOUT")
	return s, l.Err()
}

func run(ctx context.Context) error {
	s, err := load(config.New())
	if err != nil {
		return err
	}
	rt, err := platform.Open(ctx, "mail", "mail", s.Settings, func(ctx context.Context, d *db.DB) error {
		return db.Migrate(ctx, d, "mail", migrations.FS)
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
		syncer, err := imapsync.New(st, sealer, s.Sync, log)
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
	h, err := api.New(api.Deps{Service: svc, Verifier: rt.Verifier})
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
	log.Info("mail listening", "addr", s.Addr)
	return httpx.Serve(ctx, s.Addr, rt.Ops.Handler(h), s.Shutdown, nil)
}
