package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/config"
)

// TestParseCollectsEveryError: every bad variable is named in the one
// error, whatever its kind.
func TestParseCollectsEveryError(t *testing.T) {
	t.Parallel()
	var got struct {
		Port    int           `env:"PORT" envDefault:"1" min:"1" max:"65535"`
		Timeout time.Duration `env:"TIMEOUT" envDefault:"1s" min:"0s"`
		Secret  string        `env:"SECRET,required"`
		DB      config.URL    `env:"DATABASE_URL"`
		Limit   int           `env:"LIMIT" envDefault:"1" min:"0" max:"100"`
	}
	err := config.ParseMap(&got, map[string]string{
		"PORT": "abc", "TIMEOUT": "soon", "DATABASE_URL": "not a url", "LIMIT": "500",
	})
	if err == nil {
		t.Fatal("want an error")
	}
	for _, name := range []string{"PORT", "TIMEOUT", "SECRET", "DATABASE_URL", "LIMIT"} {
		if !strings.Contains(err.Error(), name+":") {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
}

// common is a binary's configuration with the shared variables.
type common struct {
	config.Common
	N       int    `env:"N" envDefault:"1" min:"0" max:"10"`
	B       bool   `env:"B"`
	Missing string `env:"MISSING" envDefault:"def"`
}

func TestParseCommonDefaults(t *testing.T) {
	t.Parallel()
	got := common{Common: config.Common{Addr: ":9999"}}
	if err := config.ParseMap(&got, map[string]string{"N": "7", "B": "true"}); err != nil {
		t.Fatal(err)
	}
	want := common{
		Common: config.Common{Addr: ":9999", DatabaseURL: "postgres://postgres@localhost:5432/crm?sslmode=disable",
			RedisURL: "redis://localhost:6379/0", LogLevel: "info"},
		N: 7, B: true, Missing: "def",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// TestBadURLKeepsItsPasswordOut: a connection string that does not parse
// (a password with '/' or '#') is reported without the credential, read
// as a config.URL or as a string checked by CheckURL (Common).
func TestBadURLKeepsItsPasswordOut(t *testing.T) {
	t.Parallel()
	const dsn = "postgres://crm_identity:S3cr#t/pw@db:5432/crm"
	var typed struct {
		DB config.URL `env:"DATABASE_URL"`
	}
	checked := common{Common: config.Common{Addr: ":9999"}}
	for name, cfg := range map[string]any{"config.URL": &typed, "CheckURL": &checked} {
		err := config.ParseMap(cfg, map[string]string{"DATABASE_URL": dsn})
		if err == nil || strings.Contains(err.Error(), "S3cr") || !strings.Contains(err.Error(), `DATABASE_URL: must be an absolute URL, got "postgres://***@db:5432/crm"`) {
			t.Errorf("%s: error = %v, want the URL with its userinfo hidden", name, err)
		}
	}
}
