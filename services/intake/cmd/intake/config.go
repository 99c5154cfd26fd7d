package main

import (
	"errors"
	"strings"
	"time"

	pkgconfig "github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/services/intake/internal/apikey"
	"github.com/opencrm/crm/services/intake/internal/intake"
)

// config is the process configuration, read once from the environment.
type config struct {
	platform.Settings
	LeadsURL string `env:"LEADS_URL" envDefault:"http://localhost:8083"`
	// CORSList is CRM_CORS_ORIGINS as set, comma-separated; Validate
	// splits it into CORSOrigins.
	CORSList    string `env:"CRM_CORS_ORIGINS"`
	CORSOrigins []string
	KeyCacheTTL time.Duration `env:"INTAKE_KEY_CACHE_TTL" min:"0s"`
	Intake      intake.Config
}

// Validate holds the rules across fields, after the platform's settings
// (intake.Config checks its own).
func (c *config) Validate() error {
	errs := []error{c.Settings.Validate(), pkgconfig.CheckURL("LEADS_URL", c.LeadsURL)}
	c.LeadsURL = strings.TrimRight(c.LeadsURL, "/")
	c.CORSOrigins = nil
	for _, o := range strings.Split(c.CORSList, ",") {
		if o = strings.TrimSpace(o); o != "" {
			c.CORSOrigins = append(c.CORSOrigins, o)
		}
	}
	if c.KeyCacheTTL > apikey.MaxTTL {
		errs = append(errs, errors.New("INTAKE_KEY_CACHE_TTL: must be at most 5s (revoked keys are refused within 5 s)"))
	}
	return errors.Join(errs...)
}

// load reads the configuration with parse (pkgconfig.Parse, or ParseMap
// in tests) over the defaults. Without DB_MAX_CONNS the pool has 20
// connections: sustained intake at 16 clients needs more than pgx's
// default.
func load(parse func(any) error) (config, error) {
	c := config{Settings: platform.Defaults(":8086"), KeyCacheTTL: apikey.MaxTTL, Intake: intake.DefaultConfig()}
	if err := parse(&c); err != nil {
		return c, err
	}
	if c.DBMaxConns == 0 {
		c.DBMaxConns = 20
	}
	return c, nil
}
