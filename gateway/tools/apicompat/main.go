// Command apicompat is the breaking-change gate of the public API
// (docs/releasing.md): it compares the OpenAPI document the gateway serves now (written by
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
// With -internal-base and -internal-revision it checks each context's
// internal API the same way: every <ctx>.json of the revision directory
// (written by gateway/tools/openapi -internal-dir) against the released
// one of that name (api/released/internal), a finding naming the context
// too. A context with no released document yet (one whose internal API is
// new) has nothing to break and passes; a released document with no
// counterpart now is a context's whole internal API removed, and fails.
//
// Usage: apicompat -base api/released/openapi.json -revision served.json
// [-internal-base api/released/internal -internal-revision served-internal/]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	base := flag.String("base", "", "the released OpenAPI document")
	revision := flag.String("revision", "", "the OpenAPI document served now")
	internalBase := flag.String("internal-base", "", "the directory of the released internal API documents, <context>.json")
	internalRevision := flag.String("internal-revision", "", "the directory of the internal API documents generated now")
	flag.Parse()
	now := time.Now()
	internal := *internalBase != "" || *internalRevision != ""
	code := 0
	if !internal || *base != "" || *revision != "" {
		code = run(*base, *revision, now, os.Stdout, os.Stderr)
	}
	if internal {
		code = worst(code, runInternal(*internalBase, *internalRevision, now, os.Stdout, os.Stderr))
	}
	os.Exit(code)
}

// worst is the exit code of two checks: a usage or read error (2) over
// breaking changes (1) over none (0).
func worst(a, b int) int {
	if a == 2 || b == 2 {
		return 2
	}
	return max(a, b)
}

// InternalFinding is a breaking change of one context's internal API.
type InternalFinding struct {
	Context string
	Finding
}

func (f InternalFinding) String() string {
	return f.Context + " (internal): " + f.Finding.String()
}

// CheckInternal compares each internal document of revision (context →
// document) with the released one of its context in base, and returns
// the breaking changes by context, then as Check sorts them, and the
// contexts that have no released document (new ones, which pass).
func CheckInternal(base, revision map[string][]byte, now time.Time) (findings []InternalFinding, added []string, err error) {
	for _, ctx := range slices.Sorted(maps.Keys(revision)) {
		b, ok := base[ctx]
		if !ok {
			added = append(added, ctx)
			continue
		}
		found, err := Check(b, revision[ctx], now)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", ctx, err)
		}
		for _, f := range found {
			findings = append(findings, InternalFinding{Context: ctx, Finding: f})
		}
	}
	for _, ctx := range slices.Sorted(maps.Keys(base)) {
		if _, ok := revision[ctx]; !ok {
			findings = append(findings, InternalFinding{Context: ctx, Finding: Finding{Operation: "*", ID: "internal-api-removed",
				Text: "the context serves no internal API any more: every operation of its released document is removed"}})
		}
	}
	return findings, added, nil
}

// readDocuments reads dir's <context>.json files by context; a directory
// that does not exist holds none (a tree released before the internal
// documents were).
func readDocuments(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if e.IsDir() || !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[name] = b
	}
	return out, nil
}

func runInternal(baseDir, revisionDir string, now time.Time, stdout, stderr io.Writer) int {
	if baseDir == "" || revisionDir == "" {
		fmt.Fprintln(stderr, "usage: apicompat -internal-base released-dir -internal-revision generated-dir")
		return 2
	}
	base, err := readDocuments(baseDir)
	if err != nil {
		fmt.Fprintln(stderr, "apicompat:", err)
		return 2
	}
	revision, err := readDocuments(revisionDir)
	if err != nil {
		fmt.Fprintln(stderr, "apicompat:", err)
		return 2
	}
	if len(revision) == 0 {
		fmt.Fprintf(stderr, "apicompat: no internal API document in %s (gateway/tools/openapi -internal-dir writes them)\n", revisionDir)
		return 2
	}
	findings, added, err := CheckInternal(base, revision, now)
	if err != nil {
		fmt.Fprintln(stderr, "apicompat: internal", err)
		return 2
	}
	for _, ctx := range added {
		fmt.Fprintf(stdout, "apicompat: %s (internal): no released document in %s, nothing to compare (a new internal API)\n", ctx, baseDir)
	}
	return report(stdout, stderr, findings, "of the internal APIs against "+baseDir,
		"docs/releasing.md: contexts deploy one at a time, so an internal API changes additively only; deprecate first")
}

// report prints the findings of a check of what (the documents checked),
// with why a change breaks, and answers the exit code: 1 when there are
// findings, else 0.
func report[F fmt.Stringer](stdout, stderr io.Writer, findings []F, what, why string) int {
	if len(findings) == 0 {
		fmt.Fprintf(stdout, "apicompat: no breaking change %s\n", what)
		return 0
	}
	fmt.Fprintf(stderr, "apicompat: %d breaking change(s) %s (%s):\n", len(findings), what, why)
	for _, f := range findings {
		fmt.Fprintln(stderr, "  "+f.String())
	}
	return 1
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
	return report(stdout, stderr, findings, "against "+basePath,
		"docs/releasing.md: deprecate first, with Deprecation and Sunset, six months ahead")
}
