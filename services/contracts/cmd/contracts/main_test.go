package main

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/services/contracts/internal/expiry"
)

// parse reads m as the environment, as load reads the process's.
func parse(m map[string]string) (settings, error) {
	s := defaults()
	return s, config.ParseMap(&s, m)
}

func TestSettings(t *testing.T) {
	t.Parallel()
	base := map[string]string{"CRM_INTERNAL_SECRET": "0123456789abcdef"}
	with := func(kv ...string) map[string]string {
		m := maps.Clone(base)
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		s, err := parse(base)
		if err != nil {
			t.Fatal(err)
		}
		type shown struct {
			Addr, IdentityURL, DealsURL, ContactsURL string
			Render                                   renderq.Config
			Expiry                                   expiry.Config
		}
		want := shown{":8085", "http://localhost:8081", "http://localhost:8084", "http://localhost:8082",
			renderq.Config{RedisURL: "redis://localhost:6379/0", Queues: renderq.Queues{Prefix: "render"},
				Wait: 30 * time.Second, ResultTTL: 24 * time.Hour, MaxRetry: 3, PerUser: 2,
				Cooldown: 10 * time.Second, Lang: "en"},
			expiry.Config{Queue: "contracts", Cron: "5 0 * * *", RunOnStart: true}}
		got := shown{s.Addr, s.IdentityURL, s.DealsURL, s.ContactsURL, s.Render, s.Expiry}
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(expiry.Config{}, "Now")); diff != "" {
			t.Errorf("defaults (-want +got):\n%s", diff)
		}
	})
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no internal secret", map[string]string{}, "CRM_INTERNAL_SECRET"},
		{"deals not a URL", with("DEALS_URL", "deals:8084"), "DEALS_URL"},
		{"contacts not a URL", with("CONTACTS_URL", "/contacts"), "CONTACTS_URL"},
		{"redis not a URL", with("REDIS_URL", "localhost:6379"), "REDIS_URL"},
		{"render wait negative", with("RENDER_WAIT", "-1s"), "RENDER_WAIT"},
		{"render retries out of range", with("RENDER_MAX_RETRY", "11"), "RENDER_MAX_RETRY"},
		{"tagging not a bool", with("RENDER_PDF_TAGGED", "maybe"), "RENDER_PDF_TAGGED"},
		{"not a language", with("RENDER_DOCUMENT_LANG", "en_GB!"), "RENDER_DOCUMENT_LANG"},
		{"expiry on start not a bool", with("CONTRACTS_EXPIRY_ON_START", "soon"), "CONTRACTS_EXPIRY_ON_START"},
		{"bad log level", with("LOG_LEVEL", "loud"), "LOG_LEVEL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse(tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}
