package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/nyaruka/phonenumbers"

	pkgconfig "github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/platform"
)

// config is the process configuration, read once from the environment.
type config struct {
	platform.Settings
	// DealsURL is where the deals a task names are checked, and deals'
	// pointers moved by a merge.
	DealsURL string `env:"DEALS_URL" envDefault:"http://localhost:8084"`
	// LeadsURL and MailURL are the other contexts a merge moves
	// pointers in (mergeapi.Movers).
	LeadsURL string `env:"LEADS_URL" envDefault:"http://localhost:8083"`
	MailURL  string `env:"MAIL_URL" envDefault:"http://localhost:8087"`
	// PhoneRegion is the region (ISO 3166 alpha-2) a contact's number
	// without a country code is read in for duplicate matching.
	PhoneRegion string `env:"CONTACTS_PHONE_REGION" envDefault:"US"`
	// MergeRetryBase and MergeRetryMax bound the backoff of a merge whose
	// mover failed (doubling from the base); MergeInterval is how often
	// the runner looks for due merges.
	MergeRetryBase time.Duration `env:"MERGE_RETRY_BASE" envDefault:"1s"`
	MergeRetryMax  time.Duration `env:"MERGE_RETRY_MAX" envDefault:"1m"`
	MergeInterval  time.Duration `env:"MERGE_INTERVAL" envDefault:"1s"`
}

// Validate checks the shared settings, the movers' URLs, the phone
// region and the merge runner's timing.
func (c *config) Validate() error {
	errs := []error{c.Settings.Validate(), pkgconfig.CheckURL("DEALS_URL", c.DealsURL),
		pkgconfig.CheckURL("LEADS_URL", c.LeadsURL), pkgconfig.CheckURL("MAIL_URL", c.MailURL)}
	if phonenumbers.GetCountryCodeForRegion(c.PhoneRegion) == 0 {
		errs = append(errs, fmt.Errorf("CONTACTS_PHONE_REGION: %q is not a region (ISO 3166 alpha-2, e.g. US)", c.PhoneRegion))
	}
	if c.MergeRetryBase <= 0 || c.MergeInterval <= 0 {
		errs = append(errs, errors.New("MERGE_RETRY_BASE and MERGE_INTERVAL must be positive"))
	}
	if c.MergeRetryMax < c.MergeRetryBase {
		errs = append(errs, errors.New("MERGE_RETRY_MAX: must be at least MERGE_RETRY_BASE"))
	}
	return errors.Join(errs...)
}

// load reads the configuration with parse (pkgconfig.Parse, or ParseMap
// in tests), listening on :8082 unless ADDR says otherwise.
func load(parse func(any) error) (config, error) {
	c := config{Settings: platform.Defaults(":8082")}
	return c, parse(&c)
}
