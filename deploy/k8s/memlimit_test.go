package k8s_test

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// printMemLimit makes this test binary print the memory limit its Go
// runtime read from GOMEMLIMIT and exit (see TestMain).
const printMemLimit = "K8S_TEST_PRINT_MEMLIMIT"

// TestMain doubles as a probe of the Go runtime: with printMemLimit set,
// the binary reports how its runtime read GOMEMLIMIT, so the manifests'
// values are checked by the parser the processes use (an invalid value
// stops the runtime at start-up).
func TestMain(m *testing.M) {
	if os.Getenv(printMemLimit) != "" {
		fmt.Println(debug.SetMemoryLimit(-1))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runtimeMemLimit is the limit, in bytes, a Go process reads from
// GOMEMLIMIT=v.
func runtimeMemLimit(t *testing.T, v string) int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), printMemLimit+"=1", "GOMEMLIMIT="+v)
	out, err := cmd.CombinedOutput()
	if err != nil {
		// The runtime's complaint, without the stack trace after it.
		head := strings.SplitN(string(out), "\n", 3)
		t.Fatalf("a Go process with GOMEMLIMIT=%q: %v: %s", v, err, strings.Join(head[:min(2, len(head))], " "))
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatalf("GOMEMLIMIT=%q: %q: %v", v, out, err)
	}
	return n
}

var quantity = regexp.MustCompile(`^([0-9]+)(Ki|Mi|Gi|Ti|k|M|G|T)?$`)

// quantityBytes reads a Kubernetes memory quantity in the forms these
// manifests use (an integer with an optional binary or decimal suffix).
func quantityBytes(t *testing.T, q string) int64 {
	t.Helper()
	m := quantity.FindStringSubmatch(q)
	if m == nil {
		t.Fatalf("memory quantity %q: want an integer with Ki, Mi, Gi, Ti, k, M, G or T", q)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	unit := map[string]int64{"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
	return n * unit[m[2]]
}

// TestGoMemoryLimit: every Go process's GOMEMLIMIT is 90 % (±2) of its
// container's memory limit, so its garbage collector works harder before
// the kernel kills the pod, and a value the runtime accepts. The value is
// a literal beside the limit (the downward API gives the limit itself,
// not a share of it), so this keeps the two in step.
func TestGoMemoryLimit(t *testing.T) {
	t.Parallel()
	read := map[string]int64{}
	for _, l := range layouts {
		r := load(t, l.dir)
		for _, name := range processes {
			for _, c := range r.deployments[name].Spec.Template.Spec.Containers {
				var v string
				for _, e := range c.Env {
					if e.Name == "GOMEMLIMIT" {
						v = e.Value
					}
				}
				if v == "" {
					t.Errorf("%s %s: no GOMEMLIMIT", l.dir, c.Name)
					continue
				}
				if _, ok := read[v]; !ok {
					read[v] = runtimeMemLimit(t, v)
				}
				limit := quantityBytes(t, c.Resources.Limits["memory"])
				if share := float64(read[v]) / float64(limit); share < 0.88 || share > 0.92 {
					t.Errorf("%s %s: GOMEMLIMIT %s is %.1f %% of limits.memory %s, want 90 %%",
						l.dir, c.Name, v, 100*share, c.Resources.Limits["memory"])
				}
			}
		}
	}
}
