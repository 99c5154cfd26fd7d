// Package validate collects field errors for one request so the client
// learns every problem at once (422 with an errors array), not one per try.
package validate

import (
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/opencrm/crm/pkg/fault"
)

// MinYear is the earliest year a date may have: PostgreSQL has no year 0
// (it would fail the statement), and no CRM date is older than this.
const MinYear = 1000

// Lengths the platform applies unless a field says otherwise (docs/api.md, Errors).
const (
	MaxName    = 100
	MaxString  = 255
	MaxContent = 100_000
)

// Errors accumulates field errors.
type Errors struct{ list []fault.Field }

// Add records a failure for field.
func (e *Errors) Add(field, format string, args ...any) {
	e.list = append(e.list, fault.Field{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Has reports whether field already failed (to avoid piling messages).
func (e *Errors) Has(field string) bool {
	for _, fe := range e.list {
		if fe.Field == field {
			return true
		}
	}
	return false
}

// Err returns an invalid-input fault naming every field, or nil when nothing failed.
func (e *Errors) Err() error {
	if len(e.list) == 0 {
		return nil
	}
	return fault.Validation(e.list...)
}

// Required fails when s is blank after trimming.
func (e *Errors) Required(field, s string) bool {
	if strings.TrimSpace(s) == "" {
		e.Add(field, "is required")
		return false
	}
	return true
}

// MaxLen fails when s has more than max characters (not bytes), or is not
// text PostgreSQL can store (invalid UTF-8 or a NUL character): nearly
// every free-text field passes through here, so this is where such input
// becomes a 422 on its field instead of a failed statement.
func (e *Errors) MaxLen(field, s string, max int) bool {
	if msg := Text(s); msg != "" {
		e.Add(field, "%s", msg)
		return false
	}
	if utf8.RuneCountInString(s) > max {
		e.Add(field, "must be at most %d characters", max)
		return false
	}
	return true
}

// Text returns why s cannot be stored as text ("" when it can): invalid
// UTF-8, or a NUL character, which PostgreSQL's text type refuses.
func Text(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "must be valid UTF-8 text"
	case strings.IndexByte(s, 0) >= 0:
		return "must not contain NUL characters"
	}
	return ""
}

// Email fails when s is non-empty and not a bare address (no display name).
func (e *Errors) Email(field, s string) bool {
	if s == "" {
		return true
	}
	if !IsEmail(s) {
		e.Add(field, "must be a valid email address")
		return false
	}
	return true
}

// IsEmail reports whether s is a single bare address like a@b.example.
func IsEmail(s string) bool {
	if len(s) > 254 || strings.ContainsAny(s, " <>\r\n") {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	return at > 0 && strings.Contains(s[at+1:], ".") && !strings.HasSuffix(s, ".")
}

// OneOf fails when s is non-empty and not one of allowed.
func (e *Errors) OneOf(field, s string, allowed ...string) bool {
	if s == "" || slices.Contains(allowed, s) {
		return true
	}
	e.Add(field, "must be one of %s", strings.Join(allowed, ", "))
	return false
}

// Date parses s as YYYY-MM-DD; empty gives nil.
func (e *Errors) Date(field, s string) *time.Time {
	if s == "" {
		return nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		e.Add(field, "must be a date in the form YYYY-MM-DD")
		return nil
	}
	if t.Year() < MinYear {
		e.Add(field, "must be on or after %d-01-01", MinYear)
		return nil
	}
	return &t
}

// Positive fails when n is not > 0.
func (e *Errors) Positive(field string, n int64) bool {
	if n <= 0 {
		e.Add(field, "must be a positive integer")
		return false
	}
	return true
}

// Tags normalises a comma-separated tag list: trimmed, de-duplicated
// (case-insensitively), order kept, empty entries dropped.
func Tags(s string) string {
	seen := map[string]bool{}
	var out []string
	for _, t := range strings.Split(s, ",") {
		t = strings.TrimSpace(t)
		k := strings.ToLower(t)
		if t == "" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, t)
	}
	return strings.Join(out, ",")
}
