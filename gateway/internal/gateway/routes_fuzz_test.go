package gateway

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/opencrm/crm/pkg/contract/route"
)

// referenceMatches is an independent statement of which declarations a
// request could mean (a regular expression per declared path, GET
// admitting HEAD, /internal never), the oracle FuzzMatch holds the
// gateway's table to: its route is one of these, and it finds one
// whenever there is one.
func referenceMatches(routes []route.Route, method, path string) []string {
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if strings.EqualFold(first, "internal") {
		return nil
	}
	var out []string
	for _, r := range routes {
		if r.Method != method && (method != "HEAD" || r.Method != "GET") {
			continue
		}
		if patternRegexp(r.Path).MatchString(path) {
			out = append(out, r.Pattern())
		}
	}
	return out
}

func patternRegexp(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("(?s)^")
	for s := range strings.SplitSeq(strings.TrimPrefix(pattern, "/"), "/") {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			b.WriteString("/[^/]+")
			continue
		}
		b.WriteString("/" + regexp.QuoteMeta(s))
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// FuzzMatch checks the gateway's matcher against the reference on
// arbitrary methods and canonical paths: a route the reference admits or
// none when it admits none, never a route under /internal in any letter
// case, and a 405 only for a path some route has with another method.
func FuzzMatch(f *testing.F) {
	for _, s := range []struct{ method, path string }{
		{"GET", "/contacts"}, {"POST", "/contacts/import"}, {"GET", "/contacts/7/linked-emails"},
		{"DELETE", "/contracts/1/executed"}, {"GET", "/INTERNAL/contacts/1"}, {"GET", "/internal/users"},
		{"PUT", "/deal-stages/3"}, {"PATCH", "/deal-stages/3"}, {"GET", "/public/leads"}, {"GET", "/"},
		{"PATCH", "/auth/login"}, {"GET", "/users"}, {"HEAD", "/leads/export"}, {"OPTIONS", "/public/leads"},
	} {
		f.Add(s.method, s.path)
	}
	routes := Routes()
	tbl := newTable(routes)
	f.Fuzz(func(t *testing.T, method, path string) {
		path = "/" + strings.TrimPrefix(path, "/")
		if !Canonical(path) || !validMethod.MatchString(method) {
			return // refused before matching
		}
		got, allow := tbl.match(method, path)
		want := referenceMatches(routes, method, path)
		switch {
		case got == nil && len(want) > 0:
			t.Fatalf("%s %s: no route, reference %v", method, path, want)
		case got != nil && !slices.Contains(want, got.Pattern()):
			t.Fatalf("%s %s: route %s, reference %v", method, path, got.Pattern(), want)
		case got != nil && isInternal(splitPath(path)):
			t.Fatalf("%s %s: an internal path was routed to %s", method, path, got.Pattern())
		}
		for m := range strings.SplitSeq(allow, ", ") {
			if allow != "" && len(referenceMatches(routes, m, path)) == 0 {
				t.Fatalf("%s %s: Allow %q names %s, which no route has", method, path, allow, m)
			}
		}
	})
}

// validMethod is an HTTP method token as ServeMux and fasthttp take it.
var validMethod = regexp.MustCompile(`^[A-Z]{1,10}$`)

// TestDeclarations checks what the gateway needs of every declaration: a
// service it has an upstream for, a documented section, a summary, a
// public path (never under /internal), and a kind of answer.
func TestDeclarations(t *testing.T) {
	t.Parallel()
	upstreams := Upstreams{}.byService()
	for _, r := range Routes() {
		var problems []string
		if _, ok := upstreams[r.Service]; !ok {
			problems = append(problems, "service "+r.Service+" has no upstream")
		}
		if tagDescriptions[r.Tag] == "" {
			problems = append(problems, "section "+r.Tag+" is not described")
		}
		if r.Summary == "" {
			problems = append(problems, "no summary")
		}
		if !strings.HasPrefix(r.Path, "/") || isInternal(splitPath(r.Path)) {
			problems = append(problems, "not a public path")
		}
		if r.Answers == route.JSON && r.Response == nil {
			problems = append(problems, "a JSON answer without its type")
		}
		if len(problems) > 0 {
			t.Errorf("%s: %s", r.Pattern(), strings.Join(problems, "; "))
		}
	}
}
