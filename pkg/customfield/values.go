package customfield

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/pkg/validate"
)

// Values are the custom field values a record holds, as stored in its
// custom_fields column: only non-empty values, each in its canonical JSON
// form (a number as a decimal string, a datetime in the API's timestamp
// layout, a user as an integer, a multi_enum as a list of strings).
type Values map[string]any

// Input is a write's partial custom_fields: an absent name keeps its
// value, null (or "") clears it.
type Input map[string]json.RawMessage

// UserExists answers whether a user id exists (a `user` field's check).
type UserExists func(ctx context.Context, id int64) (bool, error)

// Field is the error field of a custom field: custom_fields.<name>.
func Field(name string) string { return "custom_fields." + name }

// Check applies in to the values a record holds (nil for a new record)
// and returns the record's new values, or an invalid-input fault naming
// every bad custom_fields.<name>. A required field must hold a value on
// create and cannot be cleared; an archived option is kept where a record
// already holds it but refused as a new value.
func Check(ctx context.Context, defs []Definition, old Values, in Input, users UserExists) (Values, error) {
	return check(ctx, defs, old, in, users, true)
}

// check is Check, with the required rule or (Recheck) without it.
func check(ctx context.Context, defs []Definition, old Values, in Input, users UserExists, required bool) (Values, error) {
	out := make(Values, len(old)+len(in))
	for k, v := range old {
		out[k] = v
	}
	var errs validate.Errors
	var byName map[string]int // index in defs; searched directly when there are few
	if len(defs) > 16 {
		byName = make(map[string]int, len(defs))
		for i, d := range defs {
			byName[d.Name] = i
		}
	}
	names := make([]string, 0, len(in))
	for name := range in {
		names = append(names, name)
	}
	slices.Sort(names) // errors in a stable order
	for _, name := range names {
		raw := in[name]
		d := definition(defs, byName, name)
		if d == nil {
			errs.Add(Field(name), "is not a custom field of this record type")
			continue
		}
		if isEmpty(raw) {
			delete(out, name)
			continue
		}
		val, msg := decode(d, raw, old[name])
		if msg == "" && d.Type == User {
			msg = checkUser(ctx, users, val.(int64))
		}
		if msg != "" {
			errs.Add(Field(name), "%s", msg)
			continue
		}
		out[name] = val
	}
	for i := range defs {
		if !required {
			break
		}
		d := &defs[i]
		_, given := in[d.Name]
		if d.Required && out[d.Name] == nil && (old == nil || given) && !errs.Has(Field(d.Name)) {
			errs.Add(Field(d.Name), "is required")
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// definition is the definition of defs named name (the last one, as a map
// by name keeps), nil when none; byName indexes defs, or is nil and defs
// are searched.
func definition(defs []Definition, byName map[string]int, name string) *Definition {
	if byName != nil {
		if i, ok := byName[name]; ok {
			return &defs[i]
		}
		return nil
	}
	for i := len(defs) - 1; i >= 0; i-- {
		if defs[i].Name == name {
			return &defs[i]
		}
	}
	return nil
}

func checkUser(ctx context.Context, users UserExists, id int64) string {
	if users == nil {
		return ""
	}
	ok, err := users(ctx, id)
	switch {
	case err != nil:
		return "could not be checked; try again"
	case !ok:
		return "must be the id of an existing user"
	}
	return ""
}

func isEmpty(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null")) || bytes.Equal(raw, []byte(`""`))
}

// decode reads one JSON value of d's type into its canonical form, or
// says why it cannot. held is what the record holds now (an archived
// option it holds stays valid).
func decode(d *Definition, raw json.RawMessage, held any) (any, string) {
	switch d.Type {
	case Boolean:
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return nil, "must be true or false"
		}
		return b, ""
	case User:
		var n int64
		if json.Unmarshal(raw, &n) != nil || n < 1 {
			return nil, "must be a user id (a positive integer)"
		}
		return n, ""
	case MultiEnum:
		var vs []string
		if json.Unmarshal(raw, &vs) != nil {
			return nil, "must be a list of option values"
		}
		return multiEnum(*d, vs, held)
	case Number:
		s, ok := plainString(raw)
		if !ok && json.Unmarshal(raw, &s) != nil {
			var n json.Number
			if json.Unmarshal(raw, &n) != nil {
				return nil, "must be a decimal number"
			}
			s = n.String()
		}
		return Parse(*d, s, held)
	}
	s, ok := plainString(raw)
	if !ok && json.Unmarshal(raw, &s) != nil {
		return nil, "must be a string"
	}
	return Parse(*d, s, held)
}

// plainString reads raw as a JSON string that needs no unescaping: a
// quoted run of valid UTF-8 without backslash, quote or control character,
// which json.Unmarshal would read into the very same string. Any other raw
// (escapes, invalid UTF-8, not a string) is not ok: the caller decodes it
// with encoding/json, which says what it is. Batch writes check thousands
// of such values; this skips encoding/json's reflection for them.
func plainString(raw []byte) (string, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return "", false
	}
	body := raw[1 : n-1]
	for _, c := range body {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

// jsonValue is json.Marshal(v), written directly for a string json.Marshal
// would only quote (ASCII without quote, backslash, control or HTML
// characters, which it escapes).
func jsonValue(v any) (json.RawMessage, error) {
	if s, ok := v.(string); ok {
		plain := true
		for i := 0; i < len(s) && plain; i++ {
			c := s[i]
			plain = c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
		}
		if plain {
			raw := make([]byte, 0, len(s)+2)
			return append(append(append(raw, '"'), s...), '"'), nil
		}
	}
	return json.Marshal(v)
}

// Parse reads a value of d's type from text (a JSON string, a CSV cell):
// a multi_enum is a comma list and a boolean true/false, yes/no or 1/0.
func Parse(d Definition, s string, held any) (any, string) {
	if msg := validate.Text(s); msg != "" {
		return nil, msg
	}
	switch d.Type {
	case Text, Textarea:
		limit := MaxText
		if d.Type == Textarea {
			limit = MaxTextarea
		}
		if len([]rune(s)) > limit {
			return nil, "must be at most " + strconv.Itoa(limit) + " characters"
		}
		return s, ""
	case Number:
		return number(strings.TrimSpace(s))
	case Date:
		t, err := time.Parse(time.DateOnly, strings.TrimSpace(s))
		if err != nil {
			return nil, "must be a date in the form YYYY-MM-DD"
		}
		if t.Year() < validate.MinYear {
			return nil, "must be on or after 1000-01-01"
		}
		return t.Format(time.DateOnly), ""
	case DateTime:
		t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
		if err != nil {
			return nil, "must be an RFC 3339 timestamp such as 2026-11-27T09:30:00Z"
		}
		if t.Year() < validate.MinYear {
			return nil, "must be on or after 1000-01-01"
		}
		return timestamp.Of(t.Truncate(time.Microsecond)).String(), ""
	case Boolean:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "yes", "1":
			return true, ""
		case "false", "no", "0":
			return false, ""
		}
		return nil, "must be true or false"
	case Enum:
		return enum(d, strings.TrimSpace(s), held)
	case MultiEnum:
		return multiEnum(d, strings.Split(s, ","), held)
	case URL:
		s = strings.TrimSpace(s)
		u, err := url.Parse(s)
		if len(s) > MaxURL || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, "must be an http or https URL of at most 2048 characters"
		}
		return s, ""
	case Email:
		s = strings.ToLower(strings.TrimSpace(s))
		if !validate.IsEmail(s) {
			return nil, "must be a valid email address"
		}
		return s, ""
	case Phone:
		s = strings.TrimSpace(s)
		if len(s) > MaxPhone || !phoneRE.MatchString(s) {
			return nil, "must be a phone number: digits, spaces and + - ( ) . only, at most 50 characters"
		}
		return s, ""
	case User:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil || n < 1 {
			return nil, "must be a user id (a positive integer)"
		}
		return n, ""
	}
	return nil, "has an unknown type"
}

var phoneRE = regexp.MustCompile(`^\+?[0-9 ()\-.]*[0-9][0-9 ()\-.]*$`)

// numberParts splits a decimal as `^(-?)([0-9]+)(?:\.([0-9]+))?$` would:
// its sign ("-" or ""), whole digits and fractional digits; ok is false
// when s is not one. Written out rather than matched: a batch checks
// thousands.
func numberParts(s string) (sign, whole, frac string, ok bool) {
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, dot := strings.Cut(s, ".")
	if !digits(whole) || (dot && !digits(frac)) {
		return "", "", "", false
	}
	return sign, whole, frac, true
}

// digits reports whether s is one or more ASCII digits.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// number canonicalises an exact decimal: no leading zeros, no trailing
// fractional zeros, no "-0", so equal numbers are equal strings.
func number(s string) (any, string) {
	sign, w, f, ok := numberParts(s)
	if !ok {
		return nil, "must be a decimal number such as 1250.5"
	}
	whole := strings.TrimLeft(w, "0")
	frac := strings.TrimRight(f, "0")
	if len(f) > MaxPlaces && len(frac) > MaxPlaces {
		return nil, "must have at most 6 decimal places"
	}
	if len(whole)+len(frac) > MaxDigits {
		return nil, "must have at most 18 digits"
	}
	if whole == "" {
		whole = "0"
	}
	if sign == "" && whole == w && frac == f && (frac == "") == !strings.Contains(s, ".") {
		return s, "" // canonical already: s is whole[.frac]
	}
	out := whole
	if frac != "" {
		out += "." + frac
	}
	if sign == "-" && out != "0" {
		out = "-" + out
	}
	return out, ""
}

func enum(d Definition, s string, held any) (any, string) {
	for _, o := range d.Options {
		if o.Value != s {
			continue
		}
		if o.Archived && held != s {
			return nil, "option " + strconv.Quote(s) + " is archived"
		}
		return s, ""
	}
	return nil, "must be one of " + optionList(d)
}

func multiEnum(d Definition, vs []string, held any) (any, string) {
	heldSet := map[string]bool{}
	switch h := held.(type) {
	case []string:
		for _, v := range h {
			heldSet[v] = true
		}
	case []any:
		for _, v := range h {
			if s, ok := v.(string); ok {
				heldSet[s] = true
			}
		}
	}
	out := []string{}
	for _, v := range vs {
		v = strings.TrimSpace(v)
		if v == "" || slices.Contains(out, v) {
			continue
		}
		var was any
		if heldSet[v] {
			was = v
		}
		got, msg := enum(d, v, was)
		if msg != "" {
			return nil, msg
		}
		out = append(out, got.(string))
	}
	if len(out) == 0 {
		return nil, "must hold at least one option value (null clears it)"
	}
	return out, ""
}

func optionList(d Definition) string {
	var vs []string
	for _, o := range d.Options {
		if !o.Archived {
			vs = append(vs, o.Value)
		}
	}
	return strings.Join(vs, ", ")
}

// Render is what a record's custom_fields reads as: every defined name,
// null where the record holds nothing, and nothing else (a value left by
// a deleted definition is not shown).
func Render(defs []Definition, held Values) map[string]any {
	out := make(map[string]any, len(defs))
	for _, d := range defs {
		out[d.Name] = held[d.Name]
	}
	return out
}

// Cell is the text of a held value (a CSV cell, a unique key): a
// multi_enum as a comma list.
func Cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64: // a user id read back from jsonb
		return strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		return x.String()
	case []string:
		return strings.Join(x, ",")
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = Cell(p)
		}
		return strings.Join(parts, ",")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Recheck checks, inside a write's transaction, the values a record will
// hold against the definitions the transaction holds (Hold): the write's
// own Check ran on definitions read before, which a change may have
// replaced since (a field deleted, retyped or an option removed). Every
// name old held and values does not is checked as cleared. The required
// rule stays with the write's own check (a field turned required meanwhile
// binds the next writes, as it would had this one committed first), and
// so do the users a `user` field names. old is what the record held (nil
// for a new one).
func Recheck(ctx context.Context, defs []Definition, old, values Values) error {
	in := Input{}
	for name := range old {
		in[name] = json.RawMessage("null")
	}
	for name, v := range values {
		raw, err := jsonValue(v)
		if err != nil {
			return fmt.Errorf("custom field %s: %w", name, err)
		}
		in[name] = raw
	}
	if len(in) == 0 {
		return nil
	}
	_, err := check(ctx, defs, old, in, nil, false)
	return err
}

// Encode is json.Marshal(v), the JSON a record's custom_fields column is
// written with, encoded without reflection for the canonical plain
// strings that make most values (the same bytes: keys sorted, HTML
// characters escaped).
func Encode(v Values) ([]byte, error) {
	if v == nil {
		return []byte("null"), nil
	}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]byte, 0, 32*len(v)+2)
	out = append(out, '{')
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		key, err := jsonValue(k)
		if err != nil {
			return nil, err
		}
		val, err := jsonValue(v[k])
		if err != nil {
			return nil, err
		}
		out = append(append(append(out, key...), ':'), val...)
	}
	return append(out, '}'), nil
}

// AsRead is what reading v back from the jsonb column it was written to
// (as Encode writes it) gives: the same strings and booleans, numbers as
// float64 and lists as []any, as encoding/json decodes into any. A write
// that knows what it stored takes this instead of reading the column back.
func AsRead(v Values) (Values, error) {
	out := make(Values, len(v))
	for k, x := range v {
		switch y := x.(type) {
		case string, bool, float64:
			out[k] = y
		case int64:
			out[k] = float64(y)
		case []string:
			l := make([]any, len(y))
			for i, s := range y {
				l[i] = s
			}
			out[k] = l
		default: // not a canonical value: the round trip itself
			raw, err := json.Marshal(y)
			if err != nil {
				return nil, err
			}
			var back any
			if err := json.Unmarshal(raw, &back); err != nil {
				return nil, err
			}
			out[k] = back
		}
	}
	return out, nil
}
