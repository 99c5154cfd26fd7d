// Package config reads a binary's configuration from the environment. Each
// binary declares one struct and fills it through a Loader; every problem is
// collected and reported at once, naming the variable, so a misconfigured
// deployment fails at start-up with one clear message.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Loader reads typed values from the environment and remembers every error.
type Loader struct {
	lookup func(string) (string, bool)
	errs   []error
}

// New reads from the process environment.
func New() *Loader { return &Loader{lookup: os.LookupEnv} }

// FromMap reads from a map, for tests.
func FromMap(m map[string]string) *Loader {
	return &Loader{lookup: func(k string) (string, bool) { v, ok := m[k]; return v, ok }}
}

func (l *Loader) raw(name string) (string, bool) {
	v, ok := l.lookup(name)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

func (l *Loader) fail(name, format string, args ...any) {
	l.errs = append(l.errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
}

// String returns the variable or def when unset.
func (l *Loader) String(name, def string) string {
	if v, ok := l.raw(name); ok {
		return v
	}
	return def
}

// Required returns the variable and records an error when it is unset.
func (l *Loader) Required(name string) string {
	v, ok := l.raw(name)
	if !ok {
		l.fail(name, "is required")
	}
	return v
}

// Int returns the variable as an integer within [min, max].
func (l *Loader) Int(name string, def, min, max int) int {
	v, ok := l.raw(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		l.fail(name, "must be an integer, got %q", v)
		return def
	}
	if n < min || n > max {
		l.fail(name, "must be between %d and %d, got %d", min, max, n)
		return def
	}
	return n
}

// Bool returns the variable parsed by strconv.ParseBool.
func (l *Loader) Bool(name string, def bool) bool {
	v, ok := l.raw(name)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		l.fail(name, "must be true or false, got %q", v)
		return def
	}
	return b
}

// Duration returns the variable parsed by time.ParseDuration.
func (l *Loader) Duration(name string, def time.Duration) time.Duration {
	v, ok := l.raw(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		l.fail(name, "must be a positive duration such as 30s, got %q", v)
		return def
	}
	return d
}

// URL returns the variable after checking it parses as an absolute URL.
func (l *Loader) URL(name, def string) string {
	v := l.String(name, def)
	if v == "" {
		return v
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme == "" || u.Host == "" {
		l.fail(name, "must be an absolute URL, got %q", redactUserinfo(v))
	}
	return v
}

// redactUserinfo hides what sits between "://" and the last "@" of a URL
// that did not parse (a password with '#' or '/' breaks parsing), so the
// start-up error names the problem without printing the credential.
func redactUserinfo(v string) string {
	start := strings.Index(v, "://")
	at := strings.LastIndex(v, "@")
	if start < 0 || at < start+3 {
		return v
	}
	return v[:start+3] + "***" + v[at:]
}

// Check records an error for name when ok is false; for cross-field rules.
func (l *Loader) Check(ok bool, name, message string) {
	if !ok {
		l.fail(name, "%s", message)
	}
}

// Err returns every recorded problem joined, or nil.
func (l *Loader) Err() error {
	if len(l.errs) == 0 {
		return nil
	}
	return fmt.Errorf("invalid configuration: %w", errors.Join(l.errs...))
}

// Common holds what every service process needs; binaries embed it.
type Common struct {
	// Addr is the listen address, e.g. ":8082"; each binary sets its own
	// default on the struct before Parse.
	Addr string `env:"ADDR"`
	// DatabaseURL points at the service's PostgreSQL database and role.
	DatabaseURL string `env:"DATABASE_URL" envDefault:"postgres://postgres@localhost:5432/crm?sslmode=disable"`
	// RedisURL points at Redis (rate limits, events, queues).
	RedisURL string `env:"REDIS_URL" envDefault:"redis://localhost:6379/0"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `env:"LOG_LEVEL" envDefault:"info"`
}

// Validate checks the URLs and the log level.
func (c *Common) Validate() error {
	errs := []error{CheckURL("DATABASE_URL", c.DatabaseURL), CheckURL("REDIS_URL", c.RedisURL)}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("LOG_LEVEL: must be debug, info, warn or error, got %q", c.LogLevel))
	}
	if c.Addr == "" {
		errs = append(errs, errors.New("ADDR: is required"))
	}
	return errors.Join(errs...)
}

// CheckURL reports a non-empty v that is not an absolute URL, naming the
// variable and hiding the URL's userinfo.
func CheckURL(name, v string) error {
	if v == "" {
		return nil
	}
	if u, err := url.Parse(v); err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("%s: must be an absolute URL, got %q", name, redactUserinfo(v))
	}
	return nil
}

// LoadCommon reads ADDR (or the given default), DATABASE_URL, REDIS_URL and
// LOG_LEVEL.
func (l *Loader) LoadCommon(defAddr string) Common {
	c := Common{
		Addr:        l.String("ADDR", defAddr),
		DatabaseURL: l.URL("DATABASE_URL", "postgres://postgres@localhost:5432/crm?sslmode=disable"),
		RedisURL:    l.URL("REDIS_URL", "redis://localhost:6379/0"),
		LogLevel:    l.String("LOG_LEVEL", "info"),
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		l.fail("LOG_LEVEL", "must be debug, info, warn or error, got %q", c.LogLevel)
	}
	return c
}
