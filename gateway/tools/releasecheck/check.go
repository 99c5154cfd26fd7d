package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// version is a semantic version (semver 2.0.0): X.Y.Z with an optional
// pre-release; build metadata is not used in tags.
type version struct {
	major, minor, patch int
	pre                 string
}

var versionRE = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$`)

func parseVersion(s string) (version, bool) {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return version{}, false
	}
	a, _ := strconv.Atoi(m[1])
	b, _ := strconv.Atoi(m[2])
	c, _ := strconv.Atoi(m[3])
	return version{a, b, c, m[4]}, true
}

func (v version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch)
	if v.pre != "" {
		s += "-" + v.pre
	}
	return s
}

// less orders versions as semver does (a pre-release before its release;
// pre-release identifiers compared numerically or as text, fewer first).
func (v version) less(w version) bool {
	if v.major != w.major {
		return v.major < w.major
	}
	if v.minor != w.minor {
		return v.minor < w.minor
	}
	if v.patch != w.patch {
		return v.patch < w.patch
	}
	if v.pre == w.pre {
		return false
	}
	if v.pre == "" || w.pre == "" {
		return v.pre != "" // a pre-release comes before its release
	}
	a, b := strings.Split(v.pre, "."), strings.Split(w.pre, ".")
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		x, errX := strconv.Atoi(a[i])
		y, errY := strconv.Atoi(b[i])
		switch {
		case errX == nil && errY == nil:
			return x < y
		case errX == nil:
			return true // numeric identifiers come first
		case errY == nil:
			return false
		}
		return a[i] < b[i]
	}
	return len(a) < len(b)
}

// section is one "## [...]" section of the changelog.
type section struct {
	title string // what the brackets hold: Unreleased or a version
	date  string // after " - ", for a release
	line  int
	body  []string
}

var headingRE = regexp.MustCompile(`^## \[([^\]]+)\](?: - (\S+))?\s*$`)

func sections(changelog string) []section {
	var out []section
	for i, l := range strings.Split(changelog, "\n") {
		if m := headingRE.FindStringSubmatch(l); m != nil {
			out = append(out, section{title: m[1], date: m[2], line: i + 1})
			continue
		}
		if strings.HasPrefix(l, "## ") {
			out = append(out, section{title: strings.TrimPrefix(l, "## "), line: i + 1})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].body = append(out[len(out)-1].body, l)
		}
	}
	return out
}

// entries counts a section's list items ("- ..." lines).
func (s section) entries() int {
	n := 0
	for _, l := range s.body {
		if strings.HasPrefix(l, "- ") || strings.HasPrefix(l, "* ") {
			n++
		}
	}
	return n
}

// Check reports why tag is not a release the changelog records, or nil.
func Check(tag, changelog string) error {
	want, ok := strings.CutPrefix(tag, "v")
	if !ok {
		return fmt.Errorf("a release tag is v and a semantic version (v1.2.0), not %q", tag)
	}
	v, ok := parseVersion(want)
	if !ok {
		return fmt.Errorf("a release tag is v and a semantic version (v1.2.0), not %q", tag)
	}
	secs := sections(changelog)
	var releases []section
	var found *section
	for i, s := range secs {
		if strings.EqualFold(s.title, "Unreleased") {
			if s.entries() > 0 {
				return fmt.Errorf("CHANGELOG.md line %d: the Unreleased section still holds %d entries: cut them into ## [%s] - YYYY-MM-DD",
					s.line, s.entries(), v)
			}
			continue
		}
		if _, ok := parseVersion(s.title); !ok {
			continue
		}
		releases = append(releases, s)
		if s.title == v.String() {
			if found != nil {
				return fmt.Errorf("CHANGELOG.md lines %d and %d: two sections for %s", found.line, s.line, v)
			}
			found = &secs[i]
		}
	}
	if found == nil {
		return fmt.Errorf("CHANGELOG.md has no section for it: add ## [%s] - %s with its entries (docs/releasing.md)",
			v, time.Now().UTC().Format(time.DateOnly))
	}
	if _, err := time.Parse(time.DateOnly, found.date); err != nil {
		return fmt.Errorf("CHANGELOG.md line %d: ## [%s] needs its date as \" - YYYY-MM-DD\", not %q", found.line, v, found.date)
	}
	if found.entries() == 0 {
		return fmt.Errorf("CHANGELOG.md line %d: the section of %s lists no change", found.line, v)
	}
	if releases[0].title != found.title {
		return fmt.Errorf("CHANGELOG.md line %d: the newest release is %s, above %s: a tag is the newest version", releases[0].line, releases[0].title, v)
	}
	if len(releases) > 1 {
		prev, _ := parseVersion(releases[1].title)
		if !prev.less(v) {
			return fmt.Errorf("CHANGELOG.md line %d: %s does not follow the previous release %s", found.line, v, prev)
		}
		if found.date < releases[1].date {
			return fmt.Errorf("CHANGELOG.md line %d: %s is dated %s, before the previous release %s (%s)", found.line, v, found.date, prev, releases[1].date)
		}
	}
	return nil
}
