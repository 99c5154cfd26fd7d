package main

import (
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/config"
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
		type shown struct{ Addr, IdentityURL, ContactsURL, LeadsURL string }
		want := shown{":8084", "http://localhost:8081", "http://localhost:8082", "http://localhost:8083"}
		got := shown{s.Addr, s.IdentityURL, s.ContactsURL, s.LeadsURL}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("defaults (-want +got):\n%s", diff)
		}
	})
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no internal secret", map[string]string{}, "CRM_INTERNAL_SECRET"},
		{"short internal secret", with("CRM_INTERNAL_SECRET", "short"), "CRM_INTERNAL_SECRET"},
		{"contacts not a URL", with("CONTACTS_URL", "contacts:8082"), "CONTACTS_URL"},
		{"leads not a URL", with("LEADS_URL", "/leads"), "LEADS_URL"},
		{"identity not a URL", with("IDENTITY_URL", "nope"), "IDENTITY_URL"},
		{"pool out of range", with("DB_MAX_CONNS", "1001"), "DB_MAX_CONNS"},
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
