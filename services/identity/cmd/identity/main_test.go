package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

// parse reads m as the environment, as run reads the process's.
func parse(m map[string]string) (settings, error) {
	c := defaults()
	return c, config.ParseMap(&c, m)
}

func TestSettings(t *testing.T) {
	t.Parallel()
	base := map[string]string{"CRM_INTERNAL_SECRET": "0123456789abcdef"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		c, err := parse(base)
		if err != nil {
			t.Fatal(err)
		}
		type shown struct {
			Addr                string
			Limits              identity.Limits
			AccessTTL, Refresh  time.Duration
			SecretKey, Proxies  string
			AdminEmail, AdminPW string
		}
		want := shown{Addr: ":8081", Limits: identity.Limits{PerEmailIP: 10, PerEmail: 30, PerIP: 20},
			AccessTTL: 15 * time.Minute, Refresh: 720 * time.Hour}
		got := shown{Addr: c.Addr, Limits: c.loginLimits(), AccessTTL: c.AccessTTL, Refresh: c.RefreshTTL,
			SecretKey: c.SecretKey, Proxies: c.TrustedProxies, AdminEmail: c.AdminEmail, AdminPW: c.AdminPassword}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("defaults (-want +got):\n%s", diff)
		}
		if c.HashConcurrency < 1 || c.HashConcurrency > 8 {
			t.Errorf("HashConcurrency = %d, want 1..8", c.HashConcurrency)
		}
		if c.proxies == nil {
			t.Error("no trusted proxies parsed (want loopback)")
		}
	})
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no internal secret", map[string]string{}, "CRM_INTERNAL_SECRET"},
		{"short internal secret", with("CRM_INTERNAL_SECRET", "short"), "CRM_INTERNAL_SECRET"},
		{"short secret key", with("CRM_SECRET_KEY", "short"), "CRM_SECRET_KEY"},
		{"admin without password", with("CRM_ADMIN_EMAIL", "a@example.com"), "CRM_ADMIN_PASSWORD"},
		{"admin weak password", with("CRM_ADMIN_EMAIL", "a@example.com", "CRM_ADMIN_PASSWORD", "short"), "CRM_ADMIN_PASSWORD"},
		{"admin bad email", with("CRM_ADMIN_EMAIL", "nope", "CRM_ADMIN_PASSWORD", "long-enough-pw"), "CRM_ADMIN_EMAIL"},
		{"password without email", with("CRM_ADMIN_PASSWORD", "long-enough-pw"), "CRM_ADMIN_EMAIL"},
		{"negative failures", with("CRM_LOGIN_FAILURES_PER_15M", "-1"), "CRM_LOGIN_FAILURES_PER_15M"},
		{"failures not a number", with("CRM_LOGIN_FAILURES_PER_IP_15M", "many"), "CRM_LOGIN_FAILURES_PER_IP_15M"},
		{"hash concurrency out of range", with("CRM_PASSWORD_HASH_CONCURRENCY", "65"), "CRM_PASSWORD_HASH_CONCURRENCY"},
		{"access ttl too short", with("CRM_ACCESS_TTL", "30s"), "CRM_ACCESS_TTL"},
		{"access ttl too long", with("CRM_ACCESS_TTL", "25h", "CRM_REFRESH_TTL", "48h"), "CRM_ACCESS_TTL"},
		{"access ttl not a duration", with("CRM_ACCESS_TTL", "soon"), "CRM_ACCESS_TTL"},
		{"refresh shorter than access", with("CRM_REFRESH_TTL", "5m"), "CRM_REFRESH_TTL"},
		{"bad proxies", with("CRM_TRUSTED_PROXIES", "nope"), "CRM_TRUSTED_PROXIES"},
		{"bad log level", with("LOG_LEVEL", "loud"), "LOG_LEVEL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse(tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
	c, err := parse(with("CRM_LOGIN_FAILURES_PER_15M", "0", "CRM_ADMIN_EMAIL", "a@example.com",
		"CRM_ADMIN_PASSWORD", "long-enough-pw", "CRM_TRUSTED_PROXIES", "10.0.0.0/8",
		"CRM_LOGIN_FAILURES_PER_EMAIL_15M", "5", "CRM_LOGIN_FAILURES_PER_IP_15M", "7"))
	if err != nil || c.loginLimits() != (identity.Limits{PerEmail: 5, PerIP: 7}) {
		t.Fatalf("valid config rejected: %v", err)
	}
}
