package intake

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"defaults", func(*Config) {}, ""},
		{"lease not over the timeout", func(c *Config) { c.Lease = c.ForwardTimeout },
			"INTAKE_RETRY_LEASE: must be longer than INTAKE_FORWARD_TIMEOUT"},
		{"no retry interval", func(c *Config) { c.RetryInterval = 0 },
			"INTAKE_RETRY_INTERVAL: INTAKE_RETRY_INTERVAL and INTAKE_RETRY_BASE must be positive"},
		{"max under base", func(c *Config) { c.RetryMax = c.RetryBase - time.Second },
			"INTAKE_RETRY_MAX: must be at least INTAKE_RETRY_BASE"},
	}
	for _, tc := range tests {
		c := DefaultConfig()
		tc.change(&c)
		got := ""
		if err := c.Validate(); err != nil {
			got = err.Error()
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
