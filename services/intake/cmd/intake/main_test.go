package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	pkgconfig "github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/services/intake/internal/intake"
)

// loadMap is load over env instead of the process environment.
func loadMap(env map[string]string) (config, error) {
	return load(func(c any) error { return pkgconfig.ParseMap(c, env) })
}

const secret = "0123456789abcdef"

func withSecret(extra map[string]string) map[string]string {
	m := map[string]string{"CRM_INTERNAL_SECRET": secret}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// TestLoadDefaults: every default is the one start-up always had.
func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := loadMap(withSecret(nil))
	if err != nil {
		t.Fatal(err)
	}
	type settings struct {
		Addr, LeadsURL string
		CORSOrigins    []string
		KeyCacheTTL    time.Duration
		DBMaxConns     int
		Intake         intake.Config
	}
	want := settings{Addr: ":8086", LeadsURL: "http://localhost:8083", KeyCacheTTL: 5 * time.Second,
		DBMaxConns: 20, Intake: intake.DefaultConfig()}
	got := settings{Addr: c.Addr, LeadsURL: c.LeadsURL, CORSOrigins: c.CORSOrigins, KeyCacheTTL: c.KeyCacheTTL,
		DBMaxConns: c.DBMaxConns, Intake: c.Intake}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

// TestLoadReads: set variables land where the service reads them.
func TestLoadReads(t *testing.T) {
	t.Parallel()
	c, err := loadMap(withSecret(map[string]string{
		"LEADS_URL": "http://leads:8083/", "CRM_CORS_ORIGINS": " https://a.example, ,https://b.example",
		"INTAKE_KEY_CACHE_TTL": "2s", "INTAKE_FORWARD_TIMEOUT": "3s", "INTAKE_RETRY_LEASE": "40s",
		"INTAKE_RETRY_INTERVAL": "2s", "INTAKE_RETRY_BASE": "1s", "INTAKE_RETRY_MAX": "1m",
		"INTAKE_RETRY_MAX_ATTEMPTS": "7", "INTAKE_BATCH_SIZE": "10", "INTAKE_FLUSHERS": "3", "DB_MAX_CONNS": "5",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := intake.DefaultConfig()
	want.ForwardTimeout, want.Lease, want.RetryInterval, want.RetryBase, want.RetryMax = 3*time.Second, 40*time.Second, 2*time.Second, time.Second, time.Minute
	want.MaxAttempts, want.BatchSize, want.Flushers = 7, 10, 3
	if diff := cmp.Diff(want, c.Intake); diff != "" {
		t.Errorf("intake (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"https://a.example", "https://b.example"}, c.CORSOrigins); diff != "" {
		t.Errorf("CORS origins (-want +got):\n%s", diff)
	}
	if c.LeadsURL != "http://leads:8083" || c.KeyCacheTTL != 2*time.Second || c.DBMaxConns != 5 {
		t.Errorf("settings %+v", c)
	}
}

// TestLoadRefuses: a bad value fails start-up naming its variable.
func TestLoadRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"secret missing", map[string]string{}, "CRM_INTERNAL_SECRET"},
		{"leads URL relative", withSecret(map[string]string{"LEADS_URL": "leads:8083"}), "LEADS_URL"},
		{"key cache over 5s", withSecret(map[string]string{"INTAKE_KEY_CACHE_TTL": "6s"}), "INTAKE_KEY_CACHE_TTL: must be at most 5s (revoked keys are refused within 5 s)"},
		{"lease not over the timeout", withSecret(map[string]string{"INTAKE_RETRY_LEASE": "5s"}), "INTAKE_RETRY_LEASE: must be longer than INTAKE_FORWARD_TIMEOUT"},
		{"retry interval zero", withSecret(map[string]string{"INTAKE_RETRY_INTERVAL": "0s"}), "INTAKE_RETRY_INTERVAL: INTAKE_RETRY_INTERVAL and INTAKE_RETRY_BASE must be positive"},
		{"retry max under base", withSecret(map[string]string{"INTAKE_RETRY_MAX": "1s"}), "INTAKE_RETRY_MAX: must be at least INTAKE_RETRY_BASE"},
		{"negative duration", withSecret(map[string]string{"INTAKE_FORWARD_TIMEOUT": "-1s"}), "INTAKE_FORWARD_TIMEOUT"},
		{"not a duration", withSecret(map[string]string{"INTAKE_RETRY_BASE": "soon"}), "INTAKE_RETRY_BASE"},
		{"attempts zero", withSecret(map[string]string{"INTAKE_RETRY_MAX_ATTEMPTS": "0"}), "INTAKE_RETRY_MAX_ATTEMPTS"},
		{"batch over 50", withSecret(map[string]string{"INTAKE_BATCH_SIZE": "51"}), "INTAKE_BATCH_SIZE"},
		{"flushers not a number", withSecret(map[string]string{"INTAKE_FLUSHERS": "many"}), "INTAKE_FLUSHERS"},
	}
	for _, tt := range tests {
		if _, err := loadMap(tt.env); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}
