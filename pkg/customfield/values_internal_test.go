package customfield

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"
)

// numberParts splits exactly as the pattern it replaces.
func TestNumberPartsMatchesPattern(t *testing.T) {
	re := regexp.MustCompile(`^(-?)([0-9]+)(?:\.([0-9]+))?$`)
	for _, s := range []string{"", "-", ".", "-.", "0", "-0", "12", "-12", "1.", ".5", "1.5", "-1.50", "001.000",
		"1.2.3", "1e5", "+1", "--1", "1,5", " 1", "1 ", "١٢", "12345678901234567890.123", "-0.0", "1.-5", "0x1"} {
		got, want := numberParts(s), re.FindStringSubmatch(s)
		if !slices.Equal(got, want) {
			t.Errorf("numberParts(%q) = %q, pattern %q", s, got, want)
		}
	}
}

// plainString reads what json.Unmarshal reads, or declines.
func TestPlainStringMatchesUnmarshal(t *testing.T) {
	for _, raw := range []string{`""`, `"a"`, `"ERP-0000001"`, `"é ü"`, `"a\"b"`, `"a\\b"`, `"\u0041"`, "\"a\tb\"", "\"\xff\"",
		`"<&>"`, `12`, `"unterminated`, `null`, ` "a"`, `"a" `, "\"\x7f\""} {
		got, ok := plainString([]byte(raw))
		var want string
		err := json.Unmarshal([]byte(raw), &want)
		if ok && (err != nil || got != want) {
			t.Errorf("plainString(%q) = %q, json.Unmarshal %q, %v", raw, got, want, err)
		}
	}
	for _, v := range []any{"", "a", "ERP-1", "a<b", "a&b", "é", "a\"b", "a\\b", "\x01", "\u2028", true, int64(3), []string{"a"}} {
		got, err := jsonValue(v)
		want, werr := json.Marshal(v)
		if err != nil || werr != nil || string(got) != string(want) {
			t.Errorf("jsonValue(%#v) = %s, %v; json.Marshal %s", v, got, err, want)
		}
	}
}
