package main

import (
	"errors"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/services/contracts/internal/expiry"
)

// settings is the process configuration, read once from the environment
// (names and defaults from docs/architecture.md).
type settings struct {
	platform.Settings
	DealsURL    string `env:"DEALS_URL" envDefault:"http://localhost:8084"`
	ContactsURL string `env:"CONTACTS_URL" envDefault:"http://localhost:8082"`
	// Render is the render queue (REDIS_URL, RENDER_*), validated by its
	// own Validate.
	Render renderq.Config
	// Expiry is the daily expiry and renewal job (CONTRACTS_*).
	Expiry expiry.Config
}

// Validate checks the URLs of the contexts contracts calls.
func (s *settings) Validate() error {
	return errors.Join(s.Settings.Validate(),
		config.CheckURL("DEALS_URL", s.DealsURL), config.CheckURL("CONTACTS_URL", s.ContactsURL))
}

// defaults are the settings before the environment is read: contracts
// listens on :8085.
func defaults() settings { return settings{Settings: platform.Defaults(":8085")} }

// load reads the settings from the environment.
func load() (settings, error) {
	s := defaults()
	return s, config.Parse(&s)
}
