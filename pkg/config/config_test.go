package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/config"
)

func TestLoaderCollectsEveryError(t *testing.T) {
	t.Parallel()
	l := config.FromMap(map[string]string{
		"PORT": "abc", "TIMEOUT": "soon", "DATABASE_URL": "not a url", "LIMIT": "500",
	})
	_ = l.Int("PORT", 1, 1, 65535)
	_ = l.Duration("TIMEOUT", time.Second)
	_ = l.Required("SECRET")
	_ = l.URL("DATABASE_URL", "")
	_ = l.Int("LIMIT", 1, 0, 100)
	err := l.Err()
	if err == nil {
		t.Fatal("want an error")
	}
	for _, name := range []string{"PORT", "TIMEOUT", "SECRET", "DATABASE_URL", "LIMIT"} {
		if !strings.Contains(err.Error(), name+":") {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
}

func TestLoaderDefaults(t *testing.T) {
	t.Parallel()
	l := config.FromMap(map[string]string{"N": "7", "B": "true"})
	if got := l.Int("N", 1, 0, 10); got != 7 {
		t.Errorf("Int = %d", got)
	}
	if got := l.Bool("B", false); !got {
		t.Error("Bool = false")
	}
	if got := l.String("MISSING", "def"); got != "def" {
		t.Errorf("String = %q", got)
	}
	c := l.LoadCommon(":9999")
	if c.Addr != ":9999" || c.LogLevel != "info" {
		t.Errorf("LoadCommon = %+v", c)
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestBadURLKeepsItsPasswordOut: a connection string that does not parse
// (a password with '/' or '#') is reported without the credential.
func TestBadURLKeepsItsPasswordOut(t *testing.T) {
	t.Parallel()
	l := config.FromMap(map[string]string{"DATABASE_URL": "postgres://crm_identity:S3cr#t/pw@db:5432/crm"})
	_ = l.URL("DATABASE_URL", "")
	err := l.Err()
	if err == nil || strings.Contains(err.Error(), "S3cr") || !strings.Contains(err.Error(), `"postgres://***@db:5432/crm"`) {
		t.Fatalf("error = %v, want the URL with its userinfo hidden", err)
	}
}
