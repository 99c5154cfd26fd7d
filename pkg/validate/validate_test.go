package validate_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/problem"
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

func TestStorableText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, value, want string
	}{
		{"plain", "Ada", ""},
		{"nul", "A\x00da", "must not contain NUL characters"},
		{"invalid utf8", "A\xffda", "must be valid UTF-8 text"},
	}
	for _, tt := range tests {
		var v validate.Errors
		v.MaxLen("name", tt.value, 100)
		var got string
		if p := problem.From(v.Err()); v.Err() != nil {
			got = p.Errors[0].Message
		}
		if got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestDateRange(t *testing.T) {
	t.Parallel()
	tests := []struct{ value, want string }{
		{"2026-01-31", ""},
		{"1000-01-01", ""},
		{"0999-12-31", "must be on or after 1000-01-01"},
		{"0000-01-01", "must be on or after 1000-01-01"},
		{"2026-02-30", "must be a date in the form YYYY-MM-DD"},
	}
	for _, tt := range tests {
		var v validate.Errors
		d := v.Date("due_date", tt.value)
		var got string
		if err := v.Err(); err != nil {
			got = problem.From(err).Errors[0].Message
		}
		if got != tt.want || (tt.want == "") != (d != nil) {
			t.Errorf("%s: %q (date %v), want %q", tt.value, got, d, tt.want)
		}
	}
}
