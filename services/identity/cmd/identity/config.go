package main

import (
	"errors"
	"fmt"
	"runtime"
	"time"

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
