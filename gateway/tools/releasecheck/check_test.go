package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const head = `# Changelog

Intro.

`

const v010 = `## [0.1.0] - 2026-11-24

The first version.

### Added

- Everything.
`

func TestCheck(t *testing.T) {
	t.Parallel()
	cut := head + "## [Unreleased]\n\n## [0.2.0] - 2026-12-01\n\n### Added\n\n- Releases.\n\n### Fixed\n\n- A bug.\n\n" + v010
	tests := []struct {
		name, tag, changelog string
		want                 string // "" for none, else a part of the error
	}{
		{"a cut release", "v0.2.0", cut, ""},
		{"no Unreleased heading left", "v0.2.0", strings.Replace(cut, "## [Unreleased]\n\n", "", 1), ""},
		{"a pre-release", "v1.0.0-rc.1", head + "## [1.0.0-rc.1] - 2026-12-02\n\n### Added\n\n- X.\n\n" + v010, ""},
		{"the release after its pre-release", "v1.0.0", head + "## [1.0.0] - 2026-12-03\n\n### Added\n\n- X.\n\n## [1.0.0-rc.1] - 2026-12-02\n\n### Added\n\n- X.\n\n" + v010, ""},
		{"the first release", "v0.1.0", head + v010, ""},

		{"no section for the tag", "v0.3.0", cut, "CHANGELOG.md has no section for it: add ## [0.3.0] - "},
		{"entries left in Unreleased", "v0.2.0", head + "## [Unreleased]\n\n### Added\n\n- Late.\n\n## [0.2.0] - 2026-12-01\n\n### Added\n\n- R.\n\n" + v010,
			"CHANGELOG.md line 5: the Unreleased section still holds 1 entries: cut them into ## [0.2.0] - YYYY-MM-DD"},
		{"not cut at all", "v0.2.0", head + "## [Unreleased]\n\n### Added\n\n- Releases.\n\n" + v010,
			"the Unreleased section still holds 1 entries"},
		{"no date", "v0.2.0", head + "## [0.2.0]\n\n### Added\n\n- R.\n\n" + v010,
			`CHANGELOG.md line 5: ## [0.2.0] needs its date as " - YYYY-MM-DD", not ""`},
		{"a bad date", "v0.2.0", head + "## [0.2.0] - 2026-13-01\n\n### Added\n\n- R.\n\n" + v010,
			`needs its date as " - YYYY-MM-DD", not "2026-13-01"`},
		{"an empty section", "v0.2.0", head + "## [0.2.0] - 2026-12-01\n\nNothing.\n\n" + v010,
			"CHANGELOG.md line 5: the section of 0.2.0 lists no change"},
		{"not the newest", "v0.1.0", cut, "CHANGELOG.md line 7: the newest release is 0.2.0, above 0.1.0"},
		{"below the previous", "v0.0.9", head + "## [0.0.9] - 2026-12-01\n\n### Fixed\n\n- R.\n\n" + v010,
			"CHANGELOG.md line 5: 0.0.9 does not follow the previous release 0.1.0"},
		{"the same as the previous", "v0.1.0", head + "## [0.1.0] - 2026-12-01\n\n### Fixed\n\n- R.\n\n" + v010,
			"CHANGELOG.md lines 5 and 11: two sections for 0.1.0"},
		{"dated before the previous", "v0.2.0", head + "## [0.2.0] - 2026-11-01\n\n### Added\n\n- R.\n\n" + v010,
			"0.2.0 is dated 2026-11-01, before the previous release 0.1.0 (2026-11-24)"},
		{"a tag without v", "0.2.0", cut, `a release tag is v and a semantic version (v1.2.0), not "0.2.0"`},
		{"a tag that is not semver", "v0.2", cut, `not "v0.2"`},
		{"leading zeros", "v01.2.0", cut, `not "v01.2.0"`},
		{"a branch name", "main", cut, `not "main"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Check(tc.tag, tc.changelog)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check(%s) = %v, want nil", tc.tag, err)
			case tc.want != "" && err == nil:
				t.Errorf("Check(%s) = nil, want an error with %q", tc.tag, tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("Check(%s) = %v, want it to contain %q", tc.tag, err, tc.want)
			}
		})
	}
}

// TestVersionOrder: semver precedence (semver.org, 11).
func TestVersionOrder(t *testing.T) {
	t.Parallel()
	order := []string{"0.9.9", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
		"1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0"}
	for i := range order {
		for j := range order {
			a, _ := parseVersion(order[i])
			b, _ := parseVersion(order[j])
			if got := a.less(b); got != (i < j) {
				t.Errorf("%s < %s = %v, want %v", order[i], order[j], got, i < j)
			}
		}
	}
}

// TestRun: the command's exit status and output on the repository's own
// changelog, on a tag without a section, and without its arguments.
func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "CHANGELOG.md")
	if err := os.WriteFile(file, []byte(head+"## [Unreleased]\n\n"+v010), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, tag, file string
		code            int
		out, err        string
	}{
		{"released", "v0.1.0", file, 0, "releasecheck: v0.1.0 has its CHANGELOG section", ""},
		{"no section", "v0.2.0", file, 1, "", "releasecheck: v0.2.0: CHANGELOG.md has no section for it"},
		{"no changelog", "v0.1.0", filepath.Join(dir, "none.md"), 2, "", "none.md"},
		{"no tag", "", file, 2, "", "usage: releasecheck"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			if code := run(tc.tag, tc.file, &out, &errb); code != tc.code {
				t.Errorf("exit %d, want %d (stderr %s)", code, tc.code, errb.String())
			}
			if !strings.Contains(out.String(), tc.out) || !strings.Contains(errb.String(), tc.err) {
				t.Errorf("stdout %q, stderr %q; want %q and %q", out.String(), errb.String(), tc.out, tc.err)
			}
		})
	}
}
