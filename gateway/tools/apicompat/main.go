// Command apicompat is the breaking-change gate of the public API (DESIGN
// 17): it compares the OpenAPI document the gateway serves now (written by
// gateway/tools/openapi) with the one of the last release
// (api/released/openapi.json) using oasdiff's checker, and fails naming
// each operation and field a client of the release would trip on, unless
// the change is a deprecation carried out by the rule: the operation,
// parameter or property was marked deprecated: true with an x-sunset date
// at least six months after it was deprecated, and that date has passed.
//
// It is a module of its own, outside go.work (like gateway/tools/clientgen),
// so oasdiff and its dependencies never reach a service binary's build.
//
// Usage: apicompat -base api/released/openapi.json -revision served.json
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	base := flag.String("base", "", "the released OpenAPI document")
	revision := flag.String("revision", "", "the OpenAPI document served now")
	flag.Parse()
	os.Exit(run(*base, *revision, time.Now(), os.Stdout, os.Stderr))
}

func run(basePath, revisionPath string, now time.Time, stdout, stderr io.Writer) int {
	if basePath == "" || revisionPath == "" {
		fmt.Fprintln(stderr, "usage: apicompat -base released.json -revision served.json")
		return 2
	}
	base, err := os.ReadFile(basePath)
	if err != nil {
		fmt.Fprintln(stderr, "apicompat:", err)
		return 2
	}
	revision, err := os.ReadFile(revisionPath)
	if err != nil {
		fmt.Fprintln(stderr, "apicompat:", err)
		return 2
	}
	findings, err := Check(base, revision, now)
	if err != nil {
		fmt.Fprintln(stderr, "apicompat:", err)
		return 2
	}
	if len(findings) == 0 {
		fmt.Fprintf(stdout, "apicompat: no breaking change against %s\n", basePath)
		return 0
	}
	fmt.Fprintf(stderr, "apicompat: %d breaking change(s) against %s (docs/releasing.md: deprecate first, with Deprecation and Sunset, six months ahead):\n", len(findings), basePath)
	for _, f := range findings {
		fmt.Fprintln(stderr, "  "+f.String())
	}
	return 1
}
