package main

import (
	"errors"

	pkgconfig "github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/platform"
)

// config is the process configuration, read once from the environment
// (docs/architecture.md).
type config struct {
	platform.Settings
	ContactsURL string `env:"CONTACTS_URL" envDefault:"http://localhost:8082"`
	DealsURL    string `env:"DEALS_URL" envDefault:"http://localhost:8084"`
}

// Validate checks the other contexts' addresses, after the platform's
// settings.
func (c *config) Validate() error {
	return errors.Join(c.Settings.Validate(),
		pkgconfig.CheckURL("CONTACTS_URL", c.ContactsURL), pkgconfig.CheckURL("DEALS_URL", c.DealsURL))
}

// load reads the configuration with parse (pkgconfig.Parse, or ParseMap
// in tests).
func load(parse func(any) error) (config, error) {
	c := config{Settings: platform.Defaults(":8083")}
	return c, parse(&c)
}
