package auth

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidScope(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"contacts:read": true, "contacts:write": true, "webhooks:write": true, "admin": true,
		"companies:read": false, "contacts:delete": false, "contacts": false, "Contacts:read": false,
		"admin:read": false, "": false, ":read": false,
	}
	for s, want := range tests {
		if got := ValidScope(s); got != want {
			t.Errorf("ValidScope(%q) = %v, want %v", s, got, want)
		}
	}
	for _, s := range AllScopes() {
		if !ValidScope(s) {
			t.Errorf("AllScopes lists %q, which is not valid", s)
		}
	}
	if n := len(AllScopes()); n != 13 {
		t.Errorf("AllScopes has %d scopes, want 13", n)
	}
}

func TestGrantsScope(t *testing.T) {
	t.Parallel()
	granted := []string{"contacts:write", "deals:read"}
	got := map[string]bool{}
	for _, s := range AllScopes() {
		if GrantsScope(granted, s) {
			got[s] = true
		}
	}
	want := map[string]bool{"contacts:read": true, "contacts:write": true, "deals:read": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("granted scopes (-want +got):\n%s", diff)
	}
}

func TestClaimsAllows(t *testing.T) {
	t.Parallel()
	person := &Claims{Role: RoleAdmin}
	token := &Claims{Role: RoleAdmin, Scopes: []string{"leads:read"}}
	if !person.Allows(ScopeAdmin) || person.Scoped() {
		t.Error("a person's claims are limited by role only")
	}
	if token.Allows(ScopeAdmin) || !token.Allows("leads:read") || token.Allows("leads:write") {
		t.Errorf("token claims %v allow the wrong scopes", token.Scopes)
	}
}
