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

func TestSum(t *testing.T) {
	t.Parallel()
	own := Of(os.Getpid())
	if got := Sum([]int32{int32(os.Getpid()), -1}); got < own {
		t.Fatalf("Sum(own, missing) = %v, want at least own %v", got, own)
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

func TestMachineCountsOwnWork(t *testing.T) {
	t.Parallel()
	before, own := Machine(), Of(os.Getpid())
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
	}
	spun := Of(os.Getpid()) - own
	// Ticks land on whole hundredths: allow one each side.
	if got := Machine() - before; got+20*time.Millisecond < spun {
		t.Fatalf("machine busy %v while this process alone spun %v", got, spun)
	}
}
