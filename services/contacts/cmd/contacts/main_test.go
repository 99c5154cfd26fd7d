package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	pkgconfig "github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/platform"
)

// parseMap reads m as the environment, as run reads the process's.
func parseMap(m map[string]string) func(any) error {
	return func(c any) error { return pkgconfig.ParseMap(c, m) }
}

const secret = "0123456789abcdef"

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := load(parseMap(map[string]string{"CRM_INTERNAL_SECRET": secret}))
	if err != nil {
		t.Fatal(err)
	}
	want := config{
		Settings: platform.Settings{
			Common: pkgconfig.Common{Addr: ":8082", DatabaseURL: "postgres://postgres@localhost:5432/crm?sslmode=disable",
				RedisURL: "redis://localhost:6379/0", LogLevel: "info"},
			IdentityURL: "http://localhost:8081", InternalSecret: secret,
			Shutdown: httpx.Shutdown{Delay: 5 * time.Second, Drain: 40 * time.Second},
		},
		DealsURL: "http://localhost:8084", LeadsURL: "http://localhost:8083", MailURL: "http://localhost:8087",
		PhoneRegion: "US", MergeRetryBase: time.Second, MergeRetryMax: time.Minute, MergeInterval: time.Second,
	}
	c.Tracing = want.Tracing // tracing's own defaults are pkg/tracing's to test
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestLoadValues(t *testing.T) {
	t.Parallel()
	c, err := load(parseMap(map[string]string{"CRM_INTERNAL_SECRET": secret, "ADDR": ":9000",
		"DEALS_URL": "http://deals:8084/", "IDENTITY_URL": "http://identity:8081/", "DB_MAX_CONNS": "40"}))
	if err != nil {
		t.Fatal(err)
	}
	type shown struct {
		Addr, DealsURL, IdentityURL string
		DBMaxConns                  int
	}
	// DEALS_URL is used as given (as before); IDENTITY_URL loses its slash.
	want := shown{Addr: ":9000", DealsURL: "http://deals:8084/", IdentityURL: "http://identity:8081", DBMaxConns: 40}
	if diff := cmp.Diff(want, shown{c.Addr, c.DealsURL, c.IdentityURL, c.DBMaxConns}); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

// TestLoadRefuses: a bad value of each kind stops start-up with an error
// naming its variable.
func TestLoadRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, key, value string
	}{
		{"no internal secret", "CRM_INTERNAL_SECRET", ""},
		{"short internal secret", "CRM_INTERNAL_SECRET", "short"},
		{"deals url not absolute", "DEALS_URL", "deals:8084"},
		{"identity url not absolute", "IDENTITY_URL", "/identity"},
		{"database url not absolute", "DATABASE_URL", "localhost"},
		{"bad log level", "LOG_LEVEL", "loud"},
		{"pool too large", "DB_MAX_CONNS", "1001"},
		{"pool not a number", "DB_MAX_CONNS", "many"},
		{"shutdown delay not a duration", "CRM_SHUTDOWN_DELAY", "soon"},
		{"negative drain", "CRM_DRAIN_TIMEOUT", "-1s"},
		{"leads url not absolute", "LEADS_URL", "leads"},
		{"mail url not absolute", "MAIL_URL", "mail:8087"},
		{"unknown phone region", "CONTACTS_PHONE_REGION", "XX"},
		{"merge retry base zero", "MERGE_RETRY_BASE", "0s"},
		{"merge retry max under base", "MERGE_RETRY_MAX", "1ms"},
		{"merge interval not a duration", "MERGE_INTERVAL", "often"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"CRM_INTERNAL_SECRET": secret, tt.key: tt.value}
			_, err := load(parseMap(env))
			if err == nil || !strings.Contains(err.Error(), tt.key) {
				t.Errorf("error %v, want one naming %s", err, tt.key)
			}
		})
	}
}
