package main

import (
	"errors"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/platform"
)

// settings is the process configuration, read once from the environment
// (names and defaults from docs/architecture.md).
type settings struct {
	platform.Settings
	ContactsURL string `env:"CONTACTS_URL" envDefault:"http://localhost:8082"`
	LeadsURL    string `env:"LEADS_URL" envDefault:"http://localhost:8083"`
}

// Validate checks the URLs of the contexts deals calls.
func (s *settings) Validate() error {
	return errors.Join(s.Settings.Validate(),
		config.CheckURL("CONTACTS_URL", s.ContactsURL), config.CheckURL("LEADS_URL", s.LeadsURL))
}

// defaults are the settings before the environment is read: deals
// listens on :8084.
func defaults() settings { return settings{Settings: platform.Defaults(":8084")} }

// load reads the settings from the environment.
func load() (settings, error) {
	s := defaults()
	return s, config.Parse(&s)
}
