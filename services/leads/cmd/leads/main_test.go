package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	pkgconfig "github.com/opencrm/crm/pkg/config"
)

// loadMap is load over env instead of the process environment.
func loadMap(env map[string]string) (config, error) {
	return load(func(c any) error { return pkgconfig.ParseMap(c, env) })
}

const secret = "0123456789abcdef"

// TestLoadDefaults: every default is the one start-up always had.
func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := loadMap(map[string]string{"CRM_INTERNAL_SECRET": secret})
	if err != nil {
		t.Fatal(err)
	}
	type settings struct {
		Addr, IdentityURL, ContactsURL, DealsURL string
		DBMaxConns                               int
	}
	want := settings{Addr: ":8083", IdentityURL: "http://localhost:8081",
		ContactsURL: "http://localhost:8082", DealsURL: "http://localhost:8084"}
	got := settings{Addr: c.Addr, IdentityURL: c.IdentityURL, ContactsURL: c.ContactsURL, DealsURL: c.DealsURL,
		DBMaxConns: c.DBMaxConns}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

// TestLoadRefuses: a bad value of each kind fails start-up naming its
// variable.
func TestLoadRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"secret missing", map[string]string{}, "CRM_INTERNAL_SECRET"},
		{"secret short", map[string]string{"CRM_INTERNAL_SECRET": "short"}, "CRM_INTERNAL_SECRET"},
		{"contacts URL relative", map[string]string{"CRM_INTERNAL_SECRET": secret, "CONTACTS_URL": "contacts:8082"}, "CONTACTS_URL"},
		{"deals URL relative", map[string]string{"CRM_INTERNAL_SECRET": secret, "DEALS_URL": "deals"}, "DEALS_URL"},
		{"pool not a number", map[string]string{"CRM_INTERNAL_SECRET": secret, "DB_MAX_CONNS": "many"}, "DB_MAX_CONNS"},
	}
	for _, tt := range tests {
		if _, err := loadMap(tt.env); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one naming %s", tt.name, err, tt.want)
		}
	}
}
