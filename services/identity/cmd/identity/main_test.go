package main

import (
	"strings"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

func TestLoadConfig(t *testing.T) {
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
		c, err := loadConfig(config.FromMap(base))
		if err != nil {
			t.Fatal(err)
		}
		if c.Addr != ":8081" || c.LoginLimits != (identity.Limits{PerEmailIP: 10, PerEmail: 30, PerIP: 20}) || c.AccessTTL != 15*time.Minute || c.RefreshTTL != 720*time.Hour ||
			c.HashConcurrency < 1 || c.HashConcurrency > 8 {
			t.Fatalf("defaults %+v", c)
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
		{"refresh shorter than access", with("CRM_REFRESH_TTL", "5m"), "CRM_REFRESH_TTL"},
		{"bad proxies", with("CRM_TRUSTED_PROXIES", "nope"), "CRM_TRUSTED_PROXIES"},
		{"bad log level", with("LOG_LEVEL", "loud"), "LOG_LEVEL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadConfig(config.FromMap(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
	c, err := loadConfig(config.FromMap(with("CRM_LOGIN_FAILURES_PER_15M", "0", "CRM_ADMIN_EMAIL", "a@example.com",
		"CRM_ADMIN_PASSWORD", "long-enough-pw", "CRM_TRUSTED_PROXIES", "10.0.0.0/8",
		"CRM_LOGIN_FAILURES_PER_EMAIL_15M", "5", "CRM_LOGIN_FAILURES_PER_IP_15M", "7")))
	if err != nil || c.LoginLimits != (identity.Limits{PerEmail: 5, PerIP: 7}) {
		t.Fatalf("valid config rejected: %v", err)
	}
}
