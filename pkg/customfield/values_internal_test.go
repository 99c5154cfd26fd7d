package customfield

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"testing"
)

// numberParts splits exactly as the pattern it replaces.
func TestNumberPartsMatchesPattern(t *testing.T) {
	re := regexp.MustCompile(`^(-?)([0-9]+)(?:\.([0-9]+))?$`)
	for _, s := range []string{"", "-", ".", "-.", "0", "-0", "12", "-12", "1.", ".5", "1.5", "-1.50", "001.000",
		"1.2.3", "1e5", "+1", "--1", "1,5", " 1", "1 ", "١٢", "12345678901234567890.123", "-0.0", "1.-5", "0x1"} {
		var got []string
		if sign, whole, frac, ok := numberParts(s); ok {
			got = []string{s, sign, whole, frac}
		}
		want := re.FindStringSubmatch(s)
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

// Encode writes what json.Marshal writes, and AsRead gives what decoding
// that back gives.
func TestEncodeAndAsReadMatchJSON(t *testing.T) {
	for _, v := range []Values{nil, {}, {"erp_id": "ERP-0000001", "erp_tier": "gold", "credit_limit": "1000.5", "customer_since": "2020-01-01"},
		{"b": true, "a": false, "u": int64(42), "big": int64(1) << 60, "m": []string{"x", "y<z"}, "e": []string{}, "s": "a&b \"q\" é \u2028"},
		{"f": 1.5, "n": json.Number("12")}} {
		got, err := Encode(v)
		want, werr := json.Marshal(v)
		if err != nil || werr != nil || string(got) != string(want) {
			t.Errorf("Encode(%v) = %s, %v; json.Marshal %s", v, got, err, want)
		}
		read, err := AsRead(v)
		var back Values
		if uerr := json.Unmarshal(want, &back); err != nil || uerr != nil {
			t.Fatalf("AsRead: %v %v", err, uerr)
		}
		if v == nil {
			continue
		}
		if !reflect.DeepEqual(read, back) {
			t.Errorf("AsRead(%v) = %#v, decoded %#v", v, read, back)
		}
	}
}

func TestNumberCanonical(t *testing.T) {
	for in, want := range map[string]string{"0": "0", "00": "0", "-0": "0", "-0.0": "0", "1.5": "1.5", "1.50": "1.5", "1.": "",
		"1.0": "1", "007": "7", "-007.10": "-7.1", "1000.5": "1000.5", "-3": "-3", "0.25": "0.25", ".5": "", "12": "12"} {
		got, msg := number(in)
		if want == "" {
			if msg == "" {
				t.Errorf("number(%q) = %v, want refused", in, got)
			}
			continue
		}
		if got != want || msg != "" {
			t.Errorf("number(%q) = %v %q, want %s", in, got, msg, want)
		}
	}
}
