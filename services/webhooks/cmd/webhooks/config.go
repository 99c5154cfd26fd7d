package main

import (
	"errors"
	"fmt"
	"time"

	pkgconfig "github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/netguard"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/pkg/sealbox"
	"github.com/opencrm/crm/services/webhooks/internal/delivery"
)

// SecretPurpose is the sealbox purpose of signing secrets.
const SecretPurpose = "opencrm/webhooks/signing-secret/v1"

// config is the process configuration, read once from the environment.
type config struct {
	platform.Settings
	// SecretKey seals the signing secrets at rest; required (Validate says
	// so in the words start-up has always used).
	SecretKey    string `env:"CRM_SECRET_KEY"`
	AllowHTTP    bool   `env:"WEBHOOKS_ALLOW_HTTP" envDefault:"false"`
	BlockPrivate bool   `env:"WEBHOOKS_BLOCK_PRIVATE" envDefault:"true"`
	// AllowedCIDRs keep blocking on but let chosen internal prefixes
	// through, for receivers inside the operator's network; Validate
	// parses them into exempt.
	AllowedCIDRs string `env:"WEBHOOKS_ALLOWED_CIDRS"`
	exempt       netguard.Exempt
	// ContactsURL is where the records of a CSV import are read.
	ContactsURL pkgconfig.URL `env:"CONTACTS_URL" envDefault:"http://localhost:8082"`
	// Grace is how long the previous secret signs after a rotation.
	Grace     time.Duration `env:"WEBHOOKS_ROTATION_GRACE" envDefault:"24h" min:"0s"`
	Retention time.Duration `env:"WEBHOOKS_RETENTION" envDefault:"720h" min:"0s"`
	// MaxPerOwner caps the subscriptions of one owner (a user or a token).
	MaxPerOwner int `env:"WEBHOOKS_MAX_PER_OWNER" envDefault:"25" min:"1" max:"10000"`
	// Delivery is the delivery engine's part (WEBHOOKS_WORKERS, ...);
	// Validate gives it the address rules above.
	Delivery delivery.Config
}

// Validate holds the rules across fields and parses WEBHOOKS_ALLOWED_CIDRS.
func (c *config) Validate() error {
	errs := []error{c.Settings.Validate()}
	var err error
	if c.exempt, err = netguard.ParseExempt(c.AllowedCIDRs); err != nil {
		errs = append(errs, fmt.Errorf("WEBHOOKS_ALLOWED_CIDRS: %w", err))
	}
	c.Delivery.AllowPrivate, c.Delivery.Exempt = !c.BlockPrivate, c.exempt
	switch {
	case c.SecretKey == "":
		errs = append(errs, errors.New("CRM_SECRET_KEY: is required"))
	case len(c.SecretKey) < sealbox.MinSecret:
		errs = append(errs, errors.New("CRM_SECRET_KEY: must be at least 16 characters"))
	}
	if c.Grace <= 0 {
		errs = append(errs, errors.New("WEBHOOKS_ROTATION_GRACE: must be positive"))
	}
	if c.Retention < 24*time.Hour {
		errs = append(errs, errors.New("WEBHOOKS_RETENTION: must be at least 24h"))
	}
	return errors.Join(errs...)
}

// load reads the configuration with parse (pkgconfig.Parse, or ParseMap
// in tests). Without DB_MAX_CONNS the pool has a connection per delivery
// worker and ten for the API and the loops.
func load(parse func(any) error) (config, error) {
	c := config{Settings: platform.Defaults(":8089")}
	if err := parse(&c); err != nil {
		return c, err
	}
	if c.DBMaxConns == 0 {
		c.DBMaxConns = c.Delivery.Workers + 10
	}
	return c, nil
}
