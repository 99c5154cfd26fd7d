// Command releasecheck checks that a release tag has its CHANGELOG section
// (docs/releasing.md): the tag is a semantic version vX.Y.Z, CHANGELOG.md
// has "## [X.Y.Z] - YYYY-MM-DD" with at least one entry, as its newest
// release, above every older one, and the Unreleased section was cut into
// it (holds no entry). .ci/release-check runs it with the tagged tree's
// CHANGELOG and checks the released API documents too.
//
// Usage: releasecheck -tag v1.2.0 [-changelog CHANGELOG.md]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	tag := flag.String("tag", "", "the release tag, vX.Y.Z")
	file := flag.String("changelog", "CHANGELOG.md", "the changelog of the tagged tree")
	flag.Parse()
	os.Exit(run(*tag, *file, os.Stdout, os.Stderr))
}

func run(tag, file string, stdout, stderr io.Writer) int {
	if tag == "" {
		fmt.Fprintln(stderr, "usage: releasecheck -tag vX.Y.Z [-changelog CHANGELOG.md]")
		return 2
	}
	b, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(stderr, "releasecheck:", err)
		return 2
	}
	if err := Check(tag, string(b)); err != nil {
		fmt.Fprintf(stderr, "releasecheck: %s: %v\n", tag, err)
		return 1
	}
	fmt.Fprintf(stdout, "releasecheck: %s has its CHANGELOG section\n", tag)
	return 0
}
