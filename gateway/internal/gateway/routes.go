package gateway

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/contractsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/intakeapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/mailapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/contract/webhooksapi"
	"github.com/opencrm/crm/pkg/httpx"
)

// Services known to the gateway; the names key Config.Services.
const (
	SvcIdentity  = identityapi.Service
	SvcContacts  = contactsapi.Service
	SvcLeads     = leadsapi.Service
	SvcDeals     = dealsapi.Service
	SvcContracts = contractsapi.Service
	SvcIntake    = intakeapi.Service
	SvcMail      = mailapi.Service
	SvcWebhooks  = webhooksapi.Service
)

// Routes is the public API: every context's declarations, in the
// document's order. The gateway routes, authorizes and documents exactly
// these; nothing else is proxied.
func Routes() []route.Route {
	var all []route.Route
	for _, set := range [][]route.Route{
		identityapi.Routes, contactsapi.Routes, leadsapi.Routes, dealsapi.Routes,
		contractsapi.Routes, intakeapi.Routes, mailapi.Routes, webhooksapi.Routes, historyapi.Routes, privacyapi.Routes,
	} {
		all = append(all, set...)
	}
	return all
}

// table matches a request to its declaration the way the owning service's
// router does: a ServeMux holding every declared pattern, so precedence
// ("/contacts/export" over "/contacts/{id}"), HEAD on GET routes and the
// methods a path allows are the services' own.
type table struct {
	mux *http.ServeMux
	// maxLimit is the largest body limit of any route.
	maxLimit int64
}

// declared is the mux's handler for a route: it is never served, only
// found, and carries the route.
type declared struct{ *route.Route }

func (declared) ServeHTTP(http.ResponseWriter, *http.Request) {}

func newTable(routes []route.Route) *table {
	t := &table{mux: http.NewServeMux()}
	for i := range routes {
		r := &routes[i]
		t.mux.Handle(r.Pattern(), declared{r})
		t.maxLimit = max(t.maxLimit, r.Limit())
	}
	return t
}

// deprecationHeaderValues are the headers every answer of a deprecated
// route carries: Deprecation (RFC 9745, a structured-field date: "@" and
// the Unix time of Since), Sunset (RFC 8594, an HTTP-date) and a Link to
// the documentation, whose description of the operation says what
// replaces it. The document declares them on each of the operation's
// responses (deprecationHeaders).
func deprecationHeaderValues(d *route.Deprecation) (deprecation, sunset, link string) {
	return "@" + strconv.FormatInt(d.Since.Unix(), 10),
		d.Sunset.UTC().Format(http.TimeFormat),
		`</docs>; rel="deprecation"; type="text/html"`
}

// lookups are the requests match asks the mux about (only method and
// path are read), reused: one per request would be most of match's garbage.
var lookups = sync.Pool{New: func() any { return &http.Request{URL: &url.URL{}} }}

// match finds the route of method and path (without /api, decoded and in
// canonical form). Without one, allow lists the methods the path takes
// ("" when no route has the path: a 404).
func (t *table) match(method, path string) (rt *route.Route, allow string) {
	segs := splitPath(path)
	if isInternal(segs) {
		return nil, ""
	}
	r := lookups.Get().(*http.Request)
	defer lookups.Put(r)
	r.Method, r.URL.Path = method, path
	if h, pattern := t.mux.Handler(r); pattern != "" {
		return h.(declared).Route, ""
	}
	// 404 or 405 exactly as httpx.Routes decides it in every service.
	return nil, httpx.Allowed(t.mux, r)
}

// guardOf is the route a request with a method its path does not take is
// authenticated as before it is answered 405, as it was when the service
// answered it: the path's least demanding policy, with no role or scope
// required (the answer names only methods, which the document lists).
func (t *table) guardOf(path, allow string) *route.Route {
	var guard *route.Route
	rank := map[route.Auth]int{route.Public: 0, route.Key: 1, route.JWT: 2, route.Admin: 3}
	for m := range strings.SplitSeq(allow, ", ") {
		rt, _ := t.match(m, path)
		if rt != nil && (guard == nil || rank[rt.Auth] < rank[guard.Auth]) {
			guard = rt
		}
	}
	if guard == nil {
		return nil
	}
	g := *guard
	if g.Auth == route.Admin {
		g.Auth = route.JWT
	}
	g.Resource = ""
	return &g
}

// isInternal reports paths (as segments) that must never be proxied,
// whatever is declared: service-to-service routes live under /internal.
func isInternal(segs []string) bool {
	return len(segs) > 0 && strings.EqualFold(segs[0], "internal")
}

func splitPath(p string) []string {
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// Canonical reports whether raw, a request path exactly as the client sent
// it (before any decoding or cleaning), is in canonical form: no empty
// segment (a "//" or a trailing "/"), no "." or ".." segment (also when
// percent-encoded), no encoded or literal path separator ("%2F", "%5C",
// "\\") and no malformed escape. The gateway matches the declarations
// against the cleaned path, while a service's router sees the raw one and
// redirects or routes it differently; refusing every non-canonical path
// leaves no path on which the two could disagree (a
// "/contracts/1/executed/." once matched the catch-all rule instead of the
// admin-only one).
func Canonical(raw string) bool {
	if !strings.HasPrefix(raw, "/") || strings.ContainsRune(raw, '\\') {
		return false
	}
	for seg := range strings.SplitSeq(raw[1:], "/") {
		dec, err := url.PathUnescape(seg)
		if err != nil {
			return false
		}
		switch {
		case dec == "", dec == ".", dec == "..", strings.ContainsAny(dec, "/\\"):
			return false
		}
	}
	return true
}
