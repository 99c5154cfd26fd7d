package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
)

// TestPrivacySettings: the runner's defaults, the contexts' URLs, the
// hash key derived from the internal secret unless set, and a short key
// refused.
func TestPrivacySettings(t *testing.T) {
	t.Parallel()
	base := map[string]string{"CRM_INTERNAL_SECRET": "0123456789abcdef"}
	c, err := parse(base)
	if err != nil {
		t.Fatal(err)
	}
	p := c.privacy()
	if p.Poll != 5*time.Second || p.RetryMax != 30*time.Second || p.Lease != 5*time.Minute || len(p.HashKey) != 32 ||
		p.ExportRetention != 7*24*time.Hour {
		t.Errorf("defaults %+v", p)
	}
	if diff := cmp.Diff(map[string]string{
		privacyapi.Contacts: "http://localhost:8082", privacyapi.Leads: "http://localhost:8083",
		privacyapi.Deals: "http://localhost:8084", privacyapi.Contracts: "http://localhost:8085",
		privacyapi.Intake: "http://localhost:8086", privacyapi.Mail: "http://localhost:8087",
		privacyapi.Webhooks: "http://localhost:8089",
	}, c.privacyURLs()); diff != "" {
		t.Errorf("urls (-want +got):\n%s", diff)
	}
	other, err := parse(map[string]string{"CRM_INTERNAL_SECRET": "fedcba9876543210"})
	if err != nil {
		t.Fatal(err)
	}
	if string(other.privacy().HashKey) == string(p.HashKey) {
		t.Error("two internal secrets derive one hash key")
	}
	key := strings.Repeat("k", 32)
	set, err := parse(map[string]string{"CRM_INTERNAL_SECRET": "0123456789abcdef", "CRM_PRIVACY_HASH_KEY": key,
		"CRM_PRIVACY_RETRY_MAX": "500ms", "CRM_PRIVACY_POLL": "200ms", "CRM_PRIVACY_CALL_TIMEOUT": "5m",
		"MAIL_URL": "http://mail.internal:9000/", "CRM_PRIVACY_EXPORT_RETENTION": "24h"})
	if err != nil {
		t.Fatal(err)
	}
	if p := set.privacy(); string(p.HashKey) != key || p.RetryMax != 500*time.Millisecond || p.RetryBase != 500*time.Millisecond ||
		p.Poll != 200*time.Millisecond || p.Lease != 15*time.Minute || p.ExportRetention != 24*time.Hour || set.privacyURLs()[privacyapi.Mail] != "http://mail.internal:9000" {
		t.Errorf("set %+v, urls %v", p, set.privacyURLs())
	}
	for name, env := range map[string]map[string]string{
		"CRM_PRIVACY_HASH_KEY":         {"CRM_PRIVACY_HASH_KEY": "short"},
		"CRM_PRIVACY_RETRY_MAX":        {"CRM_PRIVACY_RETRY_MAX": "2h"},
		"CRM_PRIVACY_POLL":             {"CRM_PRIVACY_POLL": "soon"},
		"WEBHOOKS_URL":                 {"WEBHOOKS_URL": "webhooks"},
		"CRM_PRIVACY_EXPORT_RETENTION": {"CRM_PRIVACY_EXPORT_RETENTION": "30m"},
	} {
		env["CRM_INTERNAL_SECRET"] = "0123456789abcdef"
		if _, err := parse(env); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: err = %v, want one naming %s", env, err, name)
		}
	}
}
