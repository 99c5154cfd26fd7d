package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// Validator is a configuration struct with rules across its fields; Parse
// calls Validate on the struct and on every struct field that has one.
type Validator interface{ Validate() error }

// Parse fills cfg, a pointer to a struct tagged `env:"NAME"` (with
// envDefault, required, and min/max bounds on numbers and durations),
// from the process environment, then validates it. A variable set to
// blanks counts as unset. Every problem is reported at once, naming the
// variable, so a misconfigured deployment fails at start-up with one
// clear message.
func Parse(cfg any) error { return ParseMap(cfg, environ()) }

// ParseMap is Parse over m instead of the process environment (tests).
func ParseMap(cfg any, m map[string]string) error {
	clean := make(map[string]string, len(m))
	for k, v := range m {
		if v = strings.TrimSpace(v); v != "" {
			clean[k] = v
		}
	}
	var errs []error
	failed := map[string]bool{}
	if err := env.ParseWithOptions(cfg, env.Options{Environment: clean, FuncMap: parsers}); err != nil {
		var agg env.AggregateError
		if errors.As(err, &agg) {
			keys := envKeys(reflect.TypeOf(cfg).Elem(), map[string]string{})
			for _, e := range agg.Errors {
				var pe env.ParseError
				var unset env.VarIsNotSetError
				switch {
				case errors.As(e, &pe) && keys[pe.Name] != "":
					e = fmt.Errorf("%s: %w", keys[pe.Name], pe.Err)
					failed[keys[pe.Name]] = true
				case errors.As(e, &unset):
					// The words operators know, naming the variable first
					// as every other message does.
					e = fmt.Errorf("%s: is required", unset.Key)
				}
				errs = append(errs, e)
			}
		} else {
			errs = append(errs, err)
		}
	}
	if len(failed) > 0 {
		// A variable that did not parse keeps its default, so the rules
		// across fields judge a sane value instead of reporting the
		// variable a second time. The errors of this pass were reported
		// by the first.
		for name := range failed {
			delete(clean, name)
		}
		_ = env.ParseWithOptions(cfg, env.Options{Environment: clean, FuncMap: parsers})
	}
	errs = append(errs, check(reflect.ValueOf(cfg).Elem(), true, failed)...)
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("invalid configuration: %w", errors.Join(errs...))
}

// parsers keep the start-up messages of values that do not parse as
// operators knew them.
var parsers = map[reflect.Type]env.ParserFunc{
	durationType: func(v string) (any, error) {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("must be a positive duration such as 30s, got %q", v)
		}
		return d, nil
	},
	reflect.TypeFor[bool](): func(v string) (any, error) {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("must be true or false, got %q", v)
		}
		return b, nil
	},
	reflect.TypeFor[int](): func(v string) (any, error) {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("must be an integer, got %q", v)
		}
		return n, nil
	},
}

// envKeys maps each field name to its variable, so a value that does not
// parse is reported by the name an operator sets.
func envKeys(t reflect.Type, keys map[string]string) map[string]string {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() == reflect.Struct && f.Tag.Get("env") == "" {
			envKeys(f.Type, keys)
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("env"), ","); name != "" {
			if prev, seen := keys[f.Name]; seen && prev != name {
				name = "" // two fields of one name: keep the library's message
			}
			keys[f.Name] = name
		}
	}
	return keys
}

func environ() map[string]string {
	m := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// check applies the min/max tags and Validate methods of v and its
// nested structs, depth first. An embedded struct's Validate is promoted
// to the struct embedding it, so it runs once, through the outer struct:
// an outer struct that declares its own Validate calls the embedded one.
// A variable that did not parse is not checked again.
func check(v reflect.Value, validate bool, failed map[string]bool) []error {
	var errs []error
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		if !f.IsExported() {
			continue
		}
		if fv.Kind() == reflect.Struct {
			errs = append(errs, check(fv, !f.Anonymous, failed)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		if failed[name] {
			continue
		}
		if err := bounds(name, f.Tag, fv); err != nil {
			errs = append(errs, err)
		}
	}
	if val, ok := v.Addr().Interface().(Validator); ok && validate {
		if err := val.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

var durationType = reflect.TypeFor[time.Duration]()

func bounds(name string, tag reflect.StructTag, v reflect.Value) error {
	lo, hasLo := tag.Lookup("min")
	hi, hasHi := tag.Lookup("max")
	if !hasLo && !hasHi {
		return nil
	}
	var n, min, max float64
	parse := strconv.ParseFloat
	switch {
	case v.Type() == durationType:
		n = float64(v.Int())
		parse = func(s string, _ int) (float64, error) {
			d, err := time.ParseDuration(s)
			return float64(d), err
		}
	case v.CanInt():
		n = float64(v.Int())
	case v.CanUint():
		n = float64(v.Uint())
	case v.CanFloat():
		n = v.Float()
	default:
		return fmt.Errorf("%s: min/max on a %s", name, v.Type())
	}
	min, max = -1e308, 1e308
	if hasLo {
		min, _ = parse(lo, 64)
	}
	if hasHi {
		max, _ = parse(hi, 64)
	}
	if n < min || n > max {
		return fmt.Errorf("%s: must be between %s and %s, got %v", name, orInf(lo, "-∞"), orInf(hi, "∞"), v.Interface())
	}
	return nil
}

func orInf(s, inf string) string {
	if s == "" {
		return inf
	}
	return s
}

// URL is an absolute URL setting; a value that does not parse is reported
// without its userinfo, so a password never reaches the start-up error.
type URL string

// UnmarshalText checks the value is an absolute URL.
func (u *URL) UnmarshalText(b []byte) error {
	v := string(b)
	p, err := url.Parse(v)
	if err != nil || p.Scheme == "" || p.Host == "" {
		return fmt.Errorf("must be an absolute URL, got %q", redactUserinfo(v))
	}
	*u = URL(v)
	return nil
}

// String is the URL without a trailing slash, ready for joining paths.
func (u URL) String() string { return strings.TrimRight(string(u), "/") }
