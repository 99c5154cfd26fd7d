package contacts_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

func ptr[T any](v T) *T { return &v }

func TestPhoneE164(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		phone, mobile *string
		region, want  string
	}{
		{ptr("+44 20 7946 0018"), nil, "US", "+442079460018"},
		{ptr("(415) 555-0100"), nil, "US", "+14155550100"},
		{ptr("020 7946 0018"), nil, "GB", "+442079460018"},
		{ptr("0044 20 7946 0018"), nil, "US", ""}, // 011 is the US's international prefix, not 00
		{ptr("call me"), ptr("+1 415 555 0100"), "US", "+14155550100"},
		{ptr("12"), nil, "US", ""},
		{nil, nil, "US", ""},
		{ptr("415.555.0100"), nil, "", "+14155550100"},
	} {
		if got := contacts.PhoneE164(tt.phone, tt.mobile, tt.region); got != tt.want {
			t.Errorf("PhoneE164(%v, %v, %s) = %q, want %q", orNil(tt.phone), orNil(tt.mobile), tt.region, got, tt.want)
		}
	}
}

func orNil(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestParseAfter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want [2]int64
		ok   bool
	}{
		{"", [2]int64{}, true}, {"3,9", [2]int64{3, 9}, true}, {"9,3", [2]int64{}, false}, {"3", [2]int64{}, false},
		{"a,b", [2]int64{}, false}, {"0,2", [2]int64{}, false}, {"3,3", [2]int64{}, false},
	} {
		got, err := contacts.ParseAfter(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseAfter(%q) = %v, %v", tt.in, got, err)
		}
		if tt.ok && tt.in != "" && contacts.Cursor(got) != tt.in {
			t.Errorf("Cursor(%v) = %q", got, contacts.Cursor(got))
		}
	}
}

func TestCombineContacts(t *testing.T) {
	t.Parallel()
	at := func(d int) timestamp.Time { return timestamp.Time{Time: time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC)} }
	defs := []customfield.Definition{{Name: "tier", Type: customfield.Enum}, {Name: "langs", Type: customfield.MultiEnum},
		{Name: "erp", Type: customfield.Text}}
	survivor := contacts.Contact{ID: 1, FirstName: "Ada", LastName: "L", Email: ptr("ada@old.test"), Tags: ptr("vip,Math"),
		Status: "active", UpdatedAt: at(1), CustomFields: map[string]any{"langs": []any{"en"}, "erp": "E-1"}}
	older := contacts.Contact{ID: 2, FirstName: "Ada", LastName: "Lovelace", JobTitle: ptr("Countess"), Phone: ptr("1"),
		Tags: ptr("math,poet"), Status: "inactive", UpdatedAt: at(2),
		CustomFields: map[string]any{"langs": []any{"fr", "en"}, "tier": "gold", "erp": "E-2"}}
	newer := contacts.Contact{ID: 3, FirstName: "A", LastName: "X", JobTitle: ptr("Analyst"), Mobile: ptr("2"),
		Status: "active", UpdatedAt: at(3), CustomFields: map[string]any{"langs": []string{"de"}, "tier": "silver"}}

	got := contacts.CombineContacts(survivor, []contacts.Contact{older, newer},
		map[string]int64{"last_name": 2, "phone": 2, "custom_fields.erp": 2}, defs)
	want := survivor
	want.LastName = "Lovelace"       // chosen
	want.Phone = ptr("1")            // chosen
	want.JobTitle = ptr("Analyst")   // the survivor has none: the newest merged one's
	want.Mobile = ptr("2")           // likewise
	want.Tags = ptr("vip,Math,poet") // united, case-insensitively
	want.CustomFields = map[string]any{
		"langs": []string{"en", "de", "fr"}, // united: survivor's first, then newest first
		"tier":  "silver",                   // newest merged one's
		"erp":   "E-2",                      // chosen
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("combined (-want +got):\n%s", diff)
	}

	// Choosing a record without a value clears it.
	got = contacts.CombineContacts(survivor, []contacts.Contact{newer}, map[string]int64{"email": 3, "custom_fields.erp": 3}, defs)
	if got.Email != nil || got.CustomFields["erp"] != nil {
		t.Errorf("chosen empty values: email %v, erp %v", got.Email, got.CustomFields["erp"])
	}
}

func TestCombineCompanies(t *testing.T) {
	t.Parallel()
	s := contacts.Company{ID: 1, Name: "Acme", CustomFields: map[string]any{}}
	m := contacts.Company{ID: 2, Name: "ACME Inc", Domain: ptr("acme.test"), Industry: ptr("Anvils"), CustomFields: map[string]any{}}
	got := contacts.CombineCompanies(s, []contacts.Company{m}, map[string]int64{"name": 2}, nil)
	want := contacts.Company{ID: 1, Name: "ACME Inc", Domain: ptr("acme.test"), Industry: ptr("Anvils"), CustomFields: map[string]any{}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("combined (-want +got):\n%s", diff)
	}
}
