// Package gogc sets the garbage collector's target of the CRM's processes.
//
// Go's default, GOGC=100, collects each time the heap grows by its live
// size. These processes keep a small live heap and allocate per request
// (a contacts batch call of 100 records, some 2 MB), so at 100 the
// collector was a fifth of the contacts service's CPU in the batch upsert
// benchmark (docs/benchmarks.md). At 200 it runs half as often, for a heap
// that may grow to three times the live one rather than twice; where
// memory is bounded (GOMEMLIMIT, which the Kubernetes manifests set), the
// runtime collects sooner as the heap nears the limit.
package gogc

import (
	"os"
	"runtime/debug"
)

// Percent is GOGC when the environment does not set it.
const Percent = 200

// Default sets GOGC to Percent unless the environment sets GOGC (any
// value, "off" included: an operator's choice stands). Every process's
// main calls it first.
func Default() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(Percent)
	}
}
