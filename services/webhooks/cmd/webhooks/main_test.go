package main

import (
	"strings"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/config"
)

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
		{"batch zero", base(map[string]string{"WEBHOOKS_BATCH": "0"}), "WEBHOOKS_BATCH"},
		{"workers zero", base(map[string]string{"WEBHOOKS_WORKERS": "0"}), "WEBHOOKS_WORKERS"},
		{"max per owner zero", base(map[string]string{"WEBHOOKS_MAX_PER_OWNER": "0"}), "WEBHOOKS_MAX_PER_OWNER"},
		{"max per owner not a number", base(map[string]string{"WEBHOOKS_MAX_PER_OWNER": "many"}), "WEBHOOKS_MAX_PER_OWNER"},
		{"ok", base(nil), ""},
	}
	for _, tt := range tests {
		s, err := load(config.FromMap(tt.env))
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
