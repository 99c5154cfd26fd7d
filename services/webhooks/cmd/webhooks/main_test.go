package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	pkgconfig "github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/services/webhooks/internal/delivery"
)

// loadMap is load over env instead of the process environment.
func loadMap(env map[string]string) (config, error) {
	return load(func(c any) error { return pkgconfig.ParseMap(c, env) })
}

func TestLoad(t *testing.T) {
	t.Parallel()
	base := func(extra map[string]string) map[string]string {
		m := map[string]string{"CRM_INTERNAL_SECRET": "0123456789abcdef", "CRM_SECRET_KEY": "0123456789abcdef"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"secret key missing", map[string]string{"CRM_INTERNAL_SECRET": "0123456789abcdef"}, "CRM_SECRET_KEY: is required"},
		{"secret key short", base(map[string]string{"CRM_SECRET_KEY": "short"}), "CRM_SECRET_KEY: must be at least 16 characters"},
		{"stale before timeout", base(map[string]string{"WEBHOOKS_TIMEOUT": "10s", "WEBHOOKS_STALE_AFTER": "5s"}), "WEBHOOKS_STALE_AFTER"},
		{"timeout over a minute", base(map[string]string{"WEBHOOKS_TIMEOUT": "2m", "WEBHOOKS_STALE_AFTER": "5m"}), "WEBHOOKS_TIMEOUT: must be between 1ms and 1m"},
		{"batch zero", base(map[string]string{"WEBHOOKS_BATCH": "0"}), "WEBHOOKS_BATCH"},
		{"workers zero", base(map[string]string{"WEBHOOKS_WORKERS": "0"}), "WEBHOOKS_WORKERS"},
		{"max per owner zero", base(map[string]string{"WEBHOOKS_MAX_PER_OWNER": "0"}), "WEBHOOKS_MAX_PER_OWNER"},
		{"max per owner not a number", base(map[string]string{"WEBHOOKS_MAX_PER_OWNER": "many"}), "WEBHOOKS_MAX_PER_OWNER"},
		{"grace negative", base(map[string]string{"WEBHOOKS_ROTATION_GRACE": "-1h"}), "WEBHOOKS_ROTATION_GRACE"},
		{"retention under a day", base(map[string]string{"WEBHOOKS_RETENTION": "23h"}), "WEBHOOKS_RETENTION: must be at least 24h"},
		{"not a duration", base(map[string]string{"WEBHOOKS_MAX_AGE": "soon"}), "WEBHOOKS_MAX_AGE"},
		{"not a boolean", base(map[string]string{"WEBHOOKS_ALLOW_HTTP": "maybe"}), "WEBHOOKS_ALLOW_HTTP"},
		{"contacts URL relative", base(map[string]string{"CONTACTS_URL": "contacts:8082"}), "CONTACTS_URL"},
		{"allowed CIDRs not prefixes", base(map[string]string{"WEBHOOKS_ALLOWED_CIDRS": "10.0.0.0/33"}), "WEBHOOKS_ALLOWED_CIDRS"},
		{"ok", base(nil), ""},
	}
	for _, tt := range tests {
		s, err := loadMap(tt.env)
		if tt.wantErr == "" {
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			d := s.Delivery
			if s.Addr != ":8089" || !s.BlockPrivate || s.AllowHTTP || d.Workers != 20 || d.PerEndpoint != 4 || d.Batch != 100 ||
				d.Timeout != 10*time.Second || d.StaleAfter != 2*time.Minute || d.AllowPrivate || s.Grace != 24*time.Hour ||
				s.MaxPerOwner != 25 {
				t.Errorf("defaults %+v", s)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.wantErr)
		}
	}
}

// TestLoadDefaults: every default is the one start-up always had.
func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := loadMap(map[string]string{"CRM_INTERNAL_SECRET": "0123456789abcdef", "CRM_SECRET_KEY": "0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	type settings struct {
		Addr, ContactsURL, AllowedCIDRs string
		AllowHTTP, BlockPrivate         bool
		Grace, Retention                time.Duration
		MaxPerOwner, DBMaxConns         int
		Delivery                        delivery.Config
	}
	want := settings{
		Addr: ":8089", ContactsURL: "http://localhost:8082", BlockPrivate: true,
		Grace: 24 * time.Hour, Retention: 30 * 24 * time.Hour, MaxPerOwner: 25, DBMaxConns: 30,
		Delivery: delivery.Config{Queue: "webhooks", Workers: 20, PerEndpoint: 4, Batch: 100,
			Timeout: 10 * time.Second, MaxAge: 72 * time.Hour, StaleAfter: 2 * time.Minute},
	}
	got := settings{
		Addr: c.Addr, ContactsURL: c.ContactsURL.String(), AllowedCIDRs: c.AllowedCIDRs,
		AllowHTTP: c.AllowHTTP, BlockPrivate: c.BlockPrivate, Grace: c.Grace, Retention: c.Retention,
		MaxPerOwner: c.MaxPerOwner, DBMaxConns: c.DBMaxConns, Delivery: c.Delivery,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got)\n%s", diff)
	}
}
