// Package config reads a binary's configuration from the environment. Each
// binary declares one tagged struct and fills it with Parse; every problem
// is collected and reported at once, naming the variable, so a
// misconfigured deployment fails at start-up with one clear message.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

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
	errs := []error{CheckURL("DATABASE_URL", c.DatabaseURL), CheckURL("REDIS_URL", c.RedisURL), CheckLogLevel(c.LogLevel)}
	if c.Addr == "" {
		errs = append(errs, errors.New("ADDR: is required"))
	}
	return errors.Join(errs...)
}

// CheckLogLevel reports a LOG_LEVEL other than debug, info, warn or error.
func CheckLogLevel(level string) error {
	switch level {
	case "debug", "info", "warn", "error":
		return nil
	}
	return fmt.Errorf("LOG_LEVEL: must be debug, info, warn or error, got %q", level)
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
