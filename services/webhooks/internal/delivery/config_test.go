package delivery

import (
	"testing"
	"time"
)

func TestConfigBatchDeadline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cfg      Config
		deadline time.Duration
		ok       bool
	}{
		{"defaults", Config{}, 20 * time.Second, true},
		{"short stale after shortens the deadline", Config{Timeout: 10 * time.Second, StaleAfter: 12 * time.Second}, time.Second, true},
		{"explicit deadline kept", Config{Timeout: time.Second, StaleAfter: 5 * time.Second, BatchDeadline: 3 * time.Second}, 3 * time.Second, true},
		{"a batch could outlive stale after", Config{Timeout: time.Second, StaleAfter: 5 * time.Second, BatchDeadline: 4 * time.Second}, 4 * time.Second, false},
		{"stale after not past the timeout", Config{Timeout: 10 * time.Second, StaleAfter: 5 * time.Second}, time.Millisecond, false},
	}
	for _, tt := range tests {
		c := tt.cfg
		c.defaults()
		err := c.check()
		if c.BatchDeadline != tt.deadline || (err == nil) != tt.ok {
			t.Errorf("%s: deadline %v, check %v; want %v, ok %v", tt.name, c.BatchDeadline, err, tt.deadline, tt.ok)
		}
	}
}
