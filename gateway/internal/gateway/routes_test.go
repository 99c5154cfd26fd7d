package gateway

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/identityapi"
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
		services := []string{r.Service}
		if r.By != nil {
			services = slices.Collect(maps.Values(r.By.Services))
			if r.Service != "" {
				problems = append(problems, "both a service and a dispatch")
			}
		}
		for _, svc := range services {
			if _, ok := upstreams[svc]; !ok {
				problems = append(problems, "service "+svc+" has no upstream")
			}
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
		// A deprecation, of the route or a parameter, has a sunset at
		// least six months after it (docs/releasing.md).
		if err := r.CheckDeprecations(); err != nil {
			problems = append(problems, err.Error())
		}
		if len(problems) > 0 {
			t.Errorf("%s: %s", r.Pattern(), strings.Join(problems, "; "))
		}
	}
}

func TestMatch(t *testing.T) {
	t.Parallel()
	tbl := newTable(Routes())
	tests := []struct {
		method, path string
		service      string
		auth         route.Auth
		limit        int64
		allow        string
	}{
		{"GET", "/contacts", SvcContacts, route.JWT, route.LimitJSON, ""},
		{"GET", "/contacts/1/linked-emails", SvcMail, route.JWT, route.LimitJSON, ""},
		{"GET", "/contacts/export", SvcContacts, route.Admin, route.LimitJSON, ""},
		{"POST", "/contacts/import", SvcContacts, route.Admin, route.LimitImport, ""},
		{"POST", "/leads/import", SvcLeads, route.JWT, route.LimitImport, ""},
		{"HEAD", "/leads/export", SvcLeads, route.Admin, route.LimitJSON, ""},
		{"GET", "/deal-stages/1", SvcDeals, route.JWT, route.LimitJSON, ""},
		{"PUT", "/deal-stages/1", SvcDeals, route.Admin, route.LimitJSON, ""},
		{"POST", "/contracts/1/executed", SvcContracts, route.JWT, route.LimitExecuted, ""},
		{"DELETE", "/contracts/1/executed", SvcContracts, route.Admin, route.LimitJSON, ""},
		{"GET", "/contract-templates/tags", SvcContracts, route.Admin, route.LimitJSON, ""},
		{"POST", "/public/leads", SvcIntake, route.Key, route.LimitPublic, ""},
		{"POST", "/auth/login", SvcIdentity, route.Public, route.LimitJSON, ""},
		{"POST", "/auth/keys/rotate", SvcIdentity, route.Admin, route.LimitJSON, ""},
		{"GET", "/auth/me", SvcIdentity, route.JWT, route.LimitJSON, ""},
		// Methods a path does not take: answered 405 after authenticating
		// as the path's least demanding route, without role or scope.
		{"POST", "/contacts/export", SvcContacts, route.JWT, route.LimitJSON, "DELETE, GET, HEAD, PUT"},
		{"PATCH", "/deal-stages/1", SvcDeals, route.JWT, route.LimitJSON, "DELETE, GET, HEAD, PUT"},
		{"GET", "/auth/login", SvcIdentity, route.Public, route.LimitJSON, "POST"},
		{"OPTIONS", "/public/leads", SvcIntake, route.Key, route.LimitPublic, "POST"},
	}
	for _, tc := range tests {
		rt, allow := tbl.match(tc.method, tc.path)
		if tc.allow != "" {
			if rt != nil || allow != tc.allow {
				t.Errorf("%s %s: route %v allow %q, want allow %q", tc.method, tc.path, rt, allow, tc.allow)
				continue
			}
			rt = tbl.guardOf(tc.path, allow)
		}
		if rt == nil {
			t.Errorf("%s %s: no route", tc.method, tc.path)
			continue
		}
		got := []any{rt.Service, rt.Auth, rt.Limit()}
		if diff := cmp.Diff([]any{tc.service, tc.auth, tc.limit}, got); diff != "" {
			t.Errorf("%s %s: service, auth, limit (-want +got):\n%s", tc.method, tc.path, diff)
		}
	}
	for _, p := range []string{"/", identityapi.PathUsers, "/INTERNAL/x", "/contactsx", "/contacts-x/1", "/unknown/1", "/contacts/1/undocumented"} {
		if rt, allow := tbl.match("GET", p); rt != nil || allow != "" {
			t.Errorf("GET %q routed to %v (allow %q)", p, rt, allow)
		}
	}
}

// TestRouteLabels checks the metrics label of a request: the declared
// path it matched, HEAD as GET, a literal segment before a wildcard; no
// label for a path nothing declares (the pipeline counts it "unmatched").
func TestRouteLabels(t *testing.T) {
	t.Parallel()
	tbl := newTable(Routes())
	tests := []struct{ method, path, want string }{
		{"GET", "/contacts/42", "/contacts/{id}"},
		{"HEAD", "/contacts/42", "/contacts/{id}"},
		{"GET", "/contacts/export", "/contacts/export"},
		{"GET", "/contacts", "/contacts"},
		{"POST", "/public/leads", "/public/leads"},
		{"GET", "/contacts/42/nothing/here", ""},
		{"GET", "/anything", ""},
	}
	for _, tt := range tests {
		got := ""
		if rt, _ := tbl.match(tt.method, tt.path); rt != nil {
			got = rt.Path
		}
		if got != tt.want {
			t.Errorf("label(%s %s) = %q, want %q", tt.method, tt.path, got, tt.want)
		}
	}
}
