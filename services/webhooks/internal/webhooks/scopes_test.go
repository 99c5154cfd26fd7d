package webhooks

import (
	"testing"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

// TestEveryEventTypeHasAReadScope: a type without one would reach no
// token at all, silently; each names a scope tokens can hold.
func TestEveryEventTypeHasAReadScope(t *testing.T) {
	t.Parallel()
	for _, typ := range webhooksapi.EventTypes {
		if s := ReadScope(typ); !auth.ValidScope(s) {
			t.Errorf("ReadScope(%q) = %q, not a scope a token can hold", typ, s)
		}
	}
}

func TestMayRead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scopes []string
		typ    string
		want   bool
	}{
		{nil, "contract.executed", true}, // an admin person
		{[]string{"webhooks:read"}, "contact.created", false},
		{[]string{"contacts:read"}, "contact.created", true},
		{[]string{"contacts:write"}, "company.deleted", true},
		{[]string{"contacts:read"}, "lead.created", false},
		{[]string{"leads:write"}, "lead.qualified", true},
		{[]string{"deals:read"}, "deal.updated", true},
		{[]string{"deals:read"}, "contract.created", false},
		{[]string{"contracts:read"}, "contract.status_changed", true},
		{[]string{"admin"}, "contract.created", false},
		{nil, "property.created", true},
		{[]string{"admin"}, "property.created", true},
		{[]string{"admin"}, "property.deleted", true},
		{[]string{"contacts:write"}, "property.updated", false},
		{[]string{"contacts:read", "leads:read", "deals:read"}, "property.created", false},
		{[]string{"webhooks:write"}, "property.created", false},
		{[]string{"contacts:read"}, "ping", false},
		{[]string{"contacts:read"}, "widget.created", false},
	}
	for _, tt := range tests {
		if got := MayRead(tt.scopes, tt.typ); got != tt.want {
			t.Errorf("MayRead(%v, %q) = %v, want %v", tt.scopes, tt.typ, got, tt.want)
		}
	}
	if t1, bad := Unreadable([]string{"*", "deal.created", "lead.created"}, []string{"deals:read"}); !bad || t1 != "lead.created" {
		t.Errorf("Unreadable = %q, %v; want lead.created", t1, bad)
	}
	if _, bad := Unreadable([]string{"*"}, []string{"webhooks:write"}); bad {
		t.Error(`Unreadable refused "*"`)
	}
}

// TestFingerprint: a receiver computes it as sha256sum does, and it holds
// nothing of the key.
func TestFingerprint(t *testing.T) {
	t.Parallel()
	// printf %s whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw | sha256sum | cut -c1-16
	if got := Fingerprint("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"); got != "96ad2ccd81462a76" {
		t.Errorf("Fingerprint = %q", got)
	}
	secret, fp := NewSecret()
	if fp != Fingerprint(secret) || len(fp) != 16 {
		t.Errorf("NewSecret gave %q for %q", fp, secret)
	}
}
