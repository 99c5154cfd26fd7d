package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/services/mail/internal/imapsync"
	"github.com/opencrm/crm/services/mail/internal/jobs"
)

// settings is the process configuration, read once from the environment.
type settings struct {
	platform.Settings
	ContactsURL string `env:"CONTACTS_URL" envDefault:"http://localhost:8082"`
	LeadsURL    string `env:"LEADS_URL" envDefault:"http://localhost:8083"`
	// SecretKey seals mailbox passwords; without it the mailbox routes
	// answer 503 and no sync runs.
	SecretKey string `env:"CRM_SECRET_KEY"`
	// SyncWorker turns the worker and scheduler off (false) for API-only
	// replicas.
	SyncWorker bool `env:"MAIL_SYNC_WORKER" envDefault:"true"`
	Jobs       jobs.Config
	Sync       imapsync.Options
}

// Validate checks the rules across fields, trims the contexts' URLs and
// sets what follows from the others: a sync task lives as long as its lease.
func (s *settings) Validate() error {
	s.ContactsURL = strings.TrimRight(s.ContactsURL, "/")
	s.LeadsURL = strings.TrimRight(s.LeadsURL, "/")
	s.Jobs.TaskTimeout = s.Sync.Lease
	errs := []error{s.Settings.Validate(), config.CheckURL("CONTACTS_URL", s.ContactsURL), config.CheckURL("LEADS_URL", s.LeadsURL)}
	check := func(ok bool, name, msg string) {
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %s", name, msg))
		}
	}
	check(s.SecretKey == "" || len(s.SecretKey) >= 16, "CRM_SECRET_KEY", "must be at least 16 characters")
	check(s.Jobs.Interval >= time.Second, "MAIL_SYNC_INTERVAL", "must be at least 1s")
	check(s.Sync.Lease >= 5*time.Second, "MAIL_SYNC_TIMEOUT", "must be at least 5s")
	check(s.Sync.GreetingTimeout >= time.Second && s.Sync.GreetingTimeout < s.Sync.Lease,
		"MAIL_IMAP_GREETING_TIMEOUT", "must be at least 1s and less than MAIL_SYNC_TIMEOUT")
	return errors.Join(errs...)
}

// defaults are the settings before the environment is read.
func defaults() settings { return settings{Settings: platform.Defaults(":8087")} }
