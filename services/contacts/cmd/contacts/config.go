package main

import (
	"errors"

	pkgconfig "github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/platform"
)

// config is the process configuration, read once from the environment.
type config struct {
	platform.Settings
	// DealsURL is where the deals a task names are checked.
	DealsURL string `env:"DEALS_URL" envDefault:"http://localhost:8084"`
}

// Validate checks the shared settings and DEALS_URL.
func (c *config) Validate() error {
	return errors.Join(c.Settings.Validate(), pkgconfig.CheckURL("DEALS_URL", c.DealsURL))
}

// load reads the configuration with parse (pkgconfig.Parse, or ParseMap
// in tests), listening on :8082 unless ADDR says otherwise.
func load(parse func(any) error) (config, error) {
	c := config{Settings: platform.Defaults(":8082")}
	return c, parse(&c)
}
