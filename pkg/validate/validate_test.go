package validate_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/validate"
)

func TestIsEmail(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"ann@example.com": true, "a.b+tag@sub.example.co": true,
		"": false, "ann": false, "ann@": false, "ann@example": false, "Ann <ann@example.com>": false,
		"ann@example.com\r\nBcc: x@y.z": false, "two@@example.com": false, "ann@example.com.": false,
	}
	for in, want := range tests {
		if got := validate.IsEmail(in); got != want {
			t.Errorf("IsEmail(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestTags(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		" vip, partner ,VIP,,new ": "vip,partner,new",
		"":                         "",
	}
	for in, want := range tests {
		if got := validate.Tags(in); got != want {
			t.Errorf("Tags(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestErrorsCollectsAll(t *testing.T) {
	t.Parallel()
	var v validate.Errors
	v.Required("first_name", " ")
	v.MaxLen("last_name", "ééé", 2)
	v.Email("email", "nope")
	v.OneOf("status", "gone", "active", "inactive")
	v.Date("due_date", "2026-13-01")
	if err := v.Err(); err == nil {
		t.Fatal("want error")
	}
	for _, f := range []string{"first_name", "last_name", "email", "status", "due_date"} {
		if !v.Has(f) {
			t.Errorf("missing error for %s", f)
		}
	}
}
