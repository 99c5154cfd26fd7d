package gateway

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// referenceMatch is an independent statement of the table's semantics (a
// regular expression per pattern, first match wins, /internal never), the
// oracle FuzzMatch compares Match against.
func referenceMatch(table []Route, method, path string) *Route {
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if strings.EqualFold(first, "internal") {
		return nil
	}
	for i := range table {
		r := &table[i]
		if len(r.Methods) > 0 && !slices.Contains(r.Methods, method) {
			continue
		}
		if patternRegexp(r.Pattern).MatchString(path) {
			return r
		}
	}
	return nil
}

func patternRegexp(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("(?s)^")
	segs := strings.Split(strings.TrimPrefix(pattern, "/"), "/")
	for i, s := range segs {
		switch {
		case s == "*" && i == len(segs)-1:
			b.WriteString("(?:/.*)?")
		case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"):
			b.WriteString("/[^/]+")
		default:
			b.WriteString("/" + regexp.QuoteMeta(s))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// FuzzMatch checks the gateway's path matcher against the reference on
// arbitrary methods and paths: same route or both none, never a route
// under /internal in any letter case, and a matched route always admits
// the method.
func FuzzMatch(f *testing.F) {
	for _, s := range []struct{ method, path string }{
		{"GET", "/contacts"}, {"GET", "/contacts/"}, {"POST", "/contacts/import"}, {"GET", "/contacts/7/linked-emails"},
		{"DELETE", "/contracts/1/executed"}, {"POST", "/contracts//executed"}, {"GET", "/INTERNAL/contacts/1"},
		{"PUT", "/deal-stages/3"}, {"GET", "/public/leads"}, {"GET", "/"}, {"GET", "//contacts"},
		{"PATCH", "/auth/login"}, {"GET", "/users"}, {"HEAD", "/leads/export"}, {"GET", "/contacts/%2e%2e/internal"},
	} {
		f.Add(s.method, s.path)
	}
	f.Fuzz(func(t *testing.T, method, path string) {
		path = "/" + strings.TrimPrefix(path, "/")
		got, want := Match(Table, method, path), referenceMatch(Table, method, path)
		if got != want {
			t.Fatalf("%s %s: Match = %v, reference = %v", method, path, pattern(got), pattern(want))
		}
		if got == nil {
			return
		}
		if isInternal(splitPath(path)) {
			t.Fatalf("%s %s: an internal path was routed to %s", method, path, got.Pattern)
		}
		if len(got.Methods) > 0 && !slices.Contains(got.Methods, method) {
			t.Fatalf("%s %s: route %s does not admit the method", method, path, got.Pattern)
		}
	})
}

func pattern(r *Route) string {
	if r == nil {
		return "none"
	}
	return r.Pattern
}
