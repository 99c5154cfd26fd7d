package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/config"
)

type sample struct {
	Port    int           `env:"PORT" envDefault:"8080" min:"1" max:"65535"`
	Timeout time.Duration `env:"TIMEOUT" envDefault:"5s" min:"1s"`
	Secret  string        `env:"SECRET,required"`
	DB      config.URL    `env:"DATABASE_URL" envDefault:"postgres://localhost/crm"`
	Nested  nested
}

type nested struct {
	Mode string `env:"MODE" envDefault:"a"`
}

func (n *nested) Validate() error {
	if n.Mode != "a" && n.Mode != "b" {
		return errors.New("MODE: must be a or b")
	}
	return nil
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	var got sample
	if err := config.ParseMap(&got, map[string]string{"SECRET": "s", "PORT": "  "}); err != nil {
		t.Fatal(err)
	}
	want := sample{Port: 8080, Timeout: 5 * time.Second, Secret: "s", DB: "postgres://localhost/crm", Nested: nested{Mode: "a"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	t.Parallel()
	var got sample
	err := config.ParseMap(&got, map[string]string{
		"PORT": "70000", "TIMEOUT": "10ms", "DATABASE_URL": "postgres://u:S3cr#t/pw@db/crm", "MODE": "c",
	})
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"PORT", "TIMEOUT", "SECRET", "DATABASE_URL", "MODE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "S3cr") {
		t.Errorf("error leaks the password: %v", err)
	}
}

func TestParseMessages(t *testing.T) {
	t.Parallel()
	var got sample
	err := config.ParseMap(&got, map[string]string{"SECRET": "s", "PORT": "eighty", "TIMEOUT": "soon"})
	if n := strings.Count(err.Error(), "TIMEOUT:"); n != 1 {
		t.Errorf("TIMEOUT named %d times: %v", n, err)
	}
	for _, want := range []string{`PORT: must be an integer, got "eighty"`, `TIMEOUT: must be a positive duration such as 30s, got "soon"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %s", err, want)
		}
	}
}

func TestParseRefusesNegativeDurations(t *testing.T) {
	t.Parallel()
	var got sample
	err := config.ParseMap(&got, map[string]string{"SECRET": "s", "TIMEOUT": "-1s"})
	if want := `TIMEOUT: must be a positive duration such as 30s, got "-1s"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v does not say %s", err, want)
	}
}

// TestParseKeepsTheDefaultOfABadValue: a variable that does not parse is
// reported once, and the rules across fields see its default.
func TestParseKeepsTheDefaultOfABadValue(t *testing.T) {
	t.Parallel()
	got := sample{}
	err := config.ParseMap(&got, map[string]string{"SECRET": "s", "PORT": "eighty", "MODE": "b"})
	if want := `invalid configuration: PORT: must be an integer, got "eighty"`; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
	if got.Port != 8080 || got.Nested.Mode != "b" {
		t.Errorf("Port, Mode = %d, %q; want the default 8080 and b", got.Port, got.Nested.Mode)
	}
}
