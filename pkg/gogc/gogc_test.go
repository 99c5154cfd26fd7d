package gogc_test

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/opencrm/crm/pkg/gogc"
)

// current reads the runtime's GOGC (SetGCPercent answers the value it
// replaces) and puts it back.
func current() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestDefault: without GOGC in the environment the process collects at
// Percent; with it, at whatever the runtime read from it. Not parallel:
// it sets the process's environment and collector.
func TestDefault(t *testing.T) {
	before := current()
	t.Cleanup(func() { debug.SetGCPercent(before) })

	t.Setenv("GOGC", "150") // restored after the test
	debug.SetGCPercent(150) // as the runtime would have read it at start
	gogc.Default()
	if got := current(); got != 150 {
		t.Errorf("GOGC=150 set: collector at %d, want 150 kept", got)
	}

	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	gogc.Default()
	if got := current(); got != gogc.Percent {
		t.Errorf("GOGC unset: collector at %d, want %d", got, gogc.Percent)
	}
}
