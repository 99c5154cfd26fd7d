package proccpu

import (
	"os"
	"regexp"
	"testing"
	"time"
)

func TestOfCountsOwnWork(t *testing.T) {
	t.Parallel()
	before := Of(os.Getpid())
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
	}
	if after := Of(os.Getpid()); after <= before {
		t.Fatalf("CPU time did not grow while spinning: %v then %v", before, after)
	}
}

func TestOfMissingProcess(t *testing.T) {
	t.Parallel()
	if got := Of(-1); got != 0 {
		t.Fatalf("Of(-1) = %v, want 0", got)
	}
}

func TestLoadAvg(t *testing.T) {
	t.Parallel()
	if got := LoadAvg(); !regexp.MustCompile(`^\d+\.\d+ \d+\.\d+ \d+\.\d+$`).MatchString(got) {
		t.Fatalf("LoadAvg() = %q, want three numbers", got)
	}
}
