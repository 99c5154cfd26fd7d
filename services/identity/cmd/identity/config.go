package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/pkg/validate"
	"github.com/opencrm/crm/services/identity/internal/api"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

// settings is the process configuration, read once from the environment
// by config.Parse and validated there, so a bad deployment fails at
// start-up with every problem named by its variable.
type settings struct {
	platform.Settings
	// SecretKey encrypts the signing keys at rest; unset stores them in
	// clear (development only).
	SecretKey string `env:"CRM_SECRET_KEY"`
	// AdminEmail and AdminPassword create the first admin when no user
	// exists yet.
	AdminEmail    string `env:"CRM_ADMIN_EMAIL"`
	AdminPassword string `env:"CRM_ADMIN_PASSWORD"`
	// The login attempts allowed per throttle window (0 disables a count).
	FailuresPerEmailIP int `env:"CRM_LOGIN_FAILURES_PER_15M" envDefault:"10" min:"0" max:"1000000"`
	FailuresPerEmail   int `env:"CRM_LOGIN_FAILURES_PER_EMAIL_15M" envDefault:"30" min:"0" max:"1000000"`
	FailuresPerIP      int `env:"CRM_LOGIN_FAILURES_PER_IP_15M" envDefault:"20" min:"0" max:"1000000"`
	// HashConcurrency bounds concurrent password hashes (19 MiB each); its
	// default depends on the machine, so it is set before parsing.
	HashConcurrency int           `env:"CRM_PASSWORD_HASH_CONCURRENCY" min:"1" max:"64"`
	AccessTTL       time.Duration `env:"CRM_ACCESS_TTL" envDefault:"15m" min:"1m" max:"24h"`
	RefreshTTL      time.Duration `env:"CRM_REFRESH_TTL" envDefault:"720h"`
	// TrustedProxies lists the peers whose X-Forwarded-For is believed;
	// unset is loopback only. Validate parses it into proxies.
	TrustedProxies string `env:"CRM_TRUSTED_PROXIES"`

	// The contexts a person's export or erasure visits
	// (privacyapi.Contexts), each at its internal API.
	ContactsURL  config.URL `env:"CONTACTS_URL" envDefault:"http://localhost:8082"`
	LeadsURL     config.URL `env:"LEADS_URL" envDefault:"http://localhost:8083"`
	DealsURL     config.URL `env:"DEALS_URL" envDefault:"http://localhost:8084"`
	ContractsURL config.URL `env:"CONTRACTS_URL" envDefault:"http://localhost:8085"`
	IntakeURL    config.URL `env:"INTAKE_URL" envDefault:"http://localhost:8086"`
	MailURL      config.URL `env:"MAIL_URL" envDefault:"http://localhost:8087"`
	WebhooksURL  config.URL `env:"WEBHOOKS_URL" envDefault:"http://localhost:8089"`
	// PrivacyHashKey keys the HMAC-SHA256 a person's privacy requests are
	// found by once their address is forgotten (a second erasure of the
	// address answers the first). Unset, it is derived from
	// CRM_INTERNAL_SECRET; set it (at least 32 characters) so that
	// rotating the internal secret keeps finding earlier erasures.
	PrivacyHashKey string `env:"CRM_PRIVACY_HASH_KEY"`
	// The privacy runner: how often it looks for due requests, the longest
	// wait before asking a context that failed again, and how long a call
	// to a context may take.
	PrivacyPoll        time.Duration `env:"CRM_PRIVACY_POLL" envDefault:"5s" min:"100ms" max:"10m"`
	PrivacyRetryMax    time.Duration `env:"CRM_PRIVACY_RETRY_MAX" envDefault:"30s" min:"100ms" max:"1h"`
	PrivacyCallTimeout time.Duration `env:"CRM_PRIVACY_CALL_TIMEOUT" envDefault:"60s" min:"1s" max:"30m"`
	// PrivacyExportRetention is how long a completed export's document (a
	// copy of everything held about the person) is kept.
	PrivacyExportRetention time.Duration `env:"CRM_PRIVACY_EXPORT_RETENTION" envDefault:"168h" min:"1h" max:"8760h"`

	proxies *api.ClientIP
}

// defaults are the settings before the environment is read; config.Parse
// then fills and validates them.
func defaults() settings {
	// Bounded by memory, not only CPU: GOMAXPROCS is the node's core count
	// when a container has no CPU limit, and 32 hashes would need 600 MiB.
	return settings{Settings: platform.Defaults(":8081"), HashConcurrency: min(2*runtime.GOMAXPROCS(0), 8)}
}

// Validate checks the rules across variables and parses the proxy list.
func (c *settings) Validate() error {
	errs := []error{c.Settings.Validate()}
	fail := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	if c.SecretKey != "" && len(c.SecretKey) < 32 {
		fail("CRM_SECRET_KEY", "must be at least 32 characters")
	}
	switch {
	case c.AdminEmail != "":
		if !validate.IsEmail(c.AdminEmail) {
			fail("CRM_ADMIN_EMAIL", "must be a valid email address")
		}
		if len([]rune(c.AdminPassword)) < identity.MinPasswordLength {
			fail("CRM_ADMIN_PASSWORD", "must be set and at least %d characters when CRM_ADMIN_EMAIL is set", identity.MinPasswordLength)
		}
	case c.AdminPassword != "":
		fail("CRM_ADMIN_EMAIL", "is required when CRM_ADMIN_PASSWORD is set")
	}
	if c.PrivacyHashKey != "" && len(c.PrivacyHashKey) < identity.MinPrivacyHashKey {
		fail("CRM_PRIVACY_HASH_KEY", "must be at least %d characters", identity.MinPrivacyHashKey)
	}
	if c.RefreshTTL <= c.AccessTTL {
		fail("CRM_REFRESH_TTL", "must be longer than CRM_ACCESS_TTL")
	}
	proxies, err := api.ParseTrustedProxies(c.TrustedProxies)
	if err != nil {
		fail("CRM_TRUSTED_PROXIES", "%v", err)
	}
	c.proxies = proxies
	return errors.Join(errs...)
}

// loginLimits are the throttle's limits as the core takes them.
func (c settings) loginLimits() identity.Limits {
	return identity.Limits{PerEmailIP: c.FailuresPerEmailIP, PerEmail: c.FailuresPerEmail, PerIP: c.FailuresPerIP}
}

// privacyHashKeyLabel derives the default privacy hash key from the
// internal secret.
const privacyHashKeyLabel = "crm privacy request hash key v1"

// privacy is the privacy runner's tuning: CRM_PRIVACY_HASH_KEY, or
// HMAC-SHA256(CRM_INTERNAL_SECRET, privacyHashKeyLabel) when unset.
func (c settings) privacy() identity.PrivacyConfig {
	p := identity.DefaultPrivacyConfig()
	p.Poll, p.RetryMax, p.ExportRetention = c.PrivacyPoll, c.PrivacyRetryMax, c.PrivacyExportRetention
	p.RetryBase = min(p.RetryBase, p.RetryMax)
	// A lease outlasts a phase's calls (they run at once) with room.
	p.Lease = max(p.Lease, 3*c.PrivacyCallTimeout)
	if c.PrivacyHashKey != "" {
		p.HashKey = []byte(c.PrivacyHashKey)
	} else {
		m := hmac.New(sha256.New, []byte(c.InternalSecret))
		m.Write([]byte(privacyHashKeyLabel))
		p.HashKey = m.Sum(nil)
	}
	return p
}

// privacyURLs are the contexts' base URLs by name.
func (c settings) privacyURLs() map[string]string {
	return map[string]string{
		privacyapi.Contacts: c.ContactsURL.String(), privacyapi.Leads: c.LeadsURL.String(),
		privacyapi.Deals: c.DealsURL.String(), privacyapi.Contracts: c.ContractsURL.String(),
		privacyapi.Intake: c.IntakeURL.String(), privacyapi.Mail: c.MailURL.String(),
		privacyapi.Webhooks: c.WebhooksURL.String(),
	}
}
