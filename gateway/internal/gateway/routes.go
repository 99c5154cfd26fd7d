package gateway

import (
	"net/url"
	"slices"
	"strings"

	"github.com/opencrm/crm/pkg/auth"
)

// Policy is how the gateway authenticates a route before proxying it.
type Policy int

// The four policies of the public API (docs/api.md, Authentication).
const (
	// Public needs no credential (login, refresh, logout, JWKS).
	Public Policy = iota
	// JWT needs a valid bearer access token.
	JWT
	// Admin needs a valid bearer access token with role admin.
	Admin
	// Key needs X-API-Key and refuses bearer tokens (the public intake API).
	Key
)

func (p Policy) String() string {
	switch p {
	case Public:
		return "public"
	case JWT:
		return "jwt"
	case Admin:
		return "admin"
	case Key:
		return "key"
	}
	return "unknown"
}

// Services known to the gateway; the names key Config.Services.
const (
	SvcIdentity  = "identity"
	SvcContacts  = "contacts"
	SvcLeads     = "leads"
	SvcDeals     = "deals"
	SvcContracts = "contracts"
	SvcIntake    = "intake"
	SvcMail      = "mail"
	SvcWebhooks  = "webhooks"
)

// Body limits. Upload limits add 1 MiB to the service's own file limit for
// multipart framing; the service enforces the exact file size itself.
const (
	LimitJSON     int64 = 1 << 20
	LimitExecuted int64 = 25<<20 + 1<<20
	LimitImport   int64 = 20<<20 + 1<<20
	LimitPublic   int64 = 64 << 10
)

// Route maps requests under /api to a service with an auth policy. Pattern
// is matched against the path without /api, segment by segment: a literal
// segment matches itself, "{name}" matches one non-empty segment, and a
// trailing "*" matches zero or more further segments ("/contacts/*" matches
// "/contacts" and everything below it). Methods empty means every method.
type Route struct {
	Methods []string
	Pattern string
	Service string
	Policy  Policy
	// BodyLimit overrides LimitJSON when > 0.
	BodyLimit int64
	// Resource names the integration-token scope family of a JWT route:
	// reads need "<Resource>:read", other methods "<Resource>:write"; empty
	// on a JWT route means any valid token (only /auth/me, "who am I").
	// An Admin route needs the admin scope, unless it names a Resource:
	// then a person still needs the admin role, and an integration token
	// needs that resource's scope whatever its role (webhooks, which an
	// integration sets up for itself).
	Resource string
}

var (
	get      = []string{"GET", "HEAD"}
	post     = []string{"POST"}
	del      = []string{"DELETE"}
	anyWrite = []string{"POST", "PUT", "PATCH", "DELETE"}
)

// Table is the gateway's single routing table, checked top to bottom; the
// first match wins, so specific rules (admin actions, routes owned by another
// service, upload limits) come before the catch-all of their resource. It
// follows docs/architecture.md; paths not listed here are 404 at the gateway,
// which is what keeps /internal/* unreachable from outside.
var Table = []Route{
	// identity
	{Methods: post, Pattern: "/auth/login", Service: SvcIdentity, Policy: Public},
	{Methods: post, Pattern: "/auth/refresh", Service: SvcIdentity, Policy: Public},
	{Methods: post, Pattern: "/auth/logout", Service: SvcIdentity, Policy: Public},
	{Methods: get, Pattern: "/auth/jwks", Service: SvcIdentity, Policy: Public},
	{Methods: post, Pattern: "/auth/keys/rotate", Service: SvcIdentity, Policy: Admin},
	{Pattern: "/auth/*", Service: SvcIdentity, Policy: JWT},
	{Pattern: "/users/*", Service: SvcIdentity, Policy: Admin},
	{Pattern: "/teams/*", Service: SvcIdentity, Policy: Admin},
	{Pattern: "/api-keys/*", Service: SvcIdentity, Policy: Admin},
	{Pattern: "/access-tokens/*", Service: SvcIdentity, Policy: Admin},

	// contacts (linked emails live in mail)
	{Methods: get, Pattern: "/contacts/export", Service: SvcContacts, Policy: Admin},
	{Methods: get, Pattern: "/contacts/template", Service: SvcContacts, Policy: Admin},
	{Methods: post, Pattern: "/contacts/import", Service: SvcContacts, Policy: Admin, BodyLimit: LimitImport},
	{Pattern: "/contacts/{id}/linked-emails", Service: SvcMail, Policy: JWT, Resource: "emails"},
	{Pattern: "/contacts/*", Service: SvcContacts, Policy: JWT, Resource: "contacts"},
	{Pattern: "/companies/*", Service: SvcContacts, Policy: JWT, Resource: "contacts"},

	// leads (linked emails live in mail)
	{Methods: get, Pattern: "/leads/export", Service: SvcLeads, Policy: Admin},
	{Methods: get, Pattern: "/leads/template", Service: SvcLeads, Policy: Admin},
	{Methods: post, Pattern: "/leads/import", Service: SvcLeads, Policy: JWT, Resource: "leads", BodyLimit: LimitImport},
	{Pattern: "/leads/{id}/linked-emails", Service: SvcMail, Policy: JWT, Resource: "emails"},
	{Pattern: "/leads/*", Service: SvcLeads, Policy: JWT, Resource: "leads"},

	// deals
	{Methods: anyWrite, Pattern: "/deal-stages/*", Service: SvcDeals, Policy: Admin},
	{Pattern: "/deal-stages/*", Service: SvcDeals, Policy: JWT, Resource: "deals"},
	{Pattern: "/deals/*", Service: SvcDeals, Policy: JWT, Resource: "deals"},
	{Pattern: "/quotes/*", Service: SvcDeals, Policy: JWT, Resource: "deals"},

	// contracts
	{Methods: del, Pattern: "/contracts/{id}/executed", Service: SvcContracts, Policy: Admin},
	{Methods: post, Pattern: "/contracts/{id}/executed", Service: SvcContracts, Policy: JWT, Resource: "contracts", BodyLimit: LimitExecuted},
	{Pattern: "/contracts/*", Service: SvcContracts, Policy: JWT, Resource: "contracts"},
	{Pattern: "/contract-templates/*", Service: SvcContracts, Policy: Admin},

	// intake
	{Pattern: "/public/*", Service: SvcIntake, Policy: Key, BodyLimit: LimitPublic},
	{Pattern: "/intake/submissions/*", Service: SvcIntake, Policy: Admin},

	// mail
	{Pattern: "/emails/*", Service: SvcMail, Policy: JWT, Resource: "emails"},
	{Pattern: "/mailboxes/*", Service: SvcMail, Policy: JWT, Resource: "emails"},

	// webhooks and the events feed
	{Pattern: "/webhooks/*", Service: SvcWebhooks, Policy: Admin, Resource: "webhooks"},
	{Methods: get, Pattern: "/events", Service: SvcWebhooks, Policy: Admin, Resource: "webhooks"},
}

// Scope is the integration-token scope a request with method needs on the
// route ("" when any valid token may call it).
func (r *Route) Scope(method string) string {
	switch {
	case r.Policy == Admin && r.Resource == "":
		return auth.ScopeAdmin
	case (r.Policy != JWT && r.Policy != Admin) || r.Resource == "":
		return ""
	case method == "GET" || method == "HEAD":
		return r.Resource + ":read"
	}
	return r.Resource + ":write"
}

// Limit is the route's request body limit.
func (r *Route) Limit() int64 {
	if r.BodyLimit > 0 {
		return r.BodyLimit
	}
	return LimitJSON
}

// Match finds the first route of table for method and path (path without
// /api, already decoded and normalised). nil means 404.
func Match(table []Route, method, path string) *Route {
	segs := splitPath(path)
	if isInternal(segs) {
		return nil
	}
	for i := range table {
		r := &table[i]
		if len(r.Methods) > 0 && !slices.Contains(r.Methods, method) {
			continue
		}
		if matchSegments(splitPath(r.Pattern), segs) {
			return r
		}
	}
	return nil
}

// isInternal reports paths (as segments) that must never be proxied,
// whatever the table says: service-to-service routes live under /internal.
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

func matchSegments(pattern, path []string) bool {
	for i, ps := range pattern {
		if ps == "*" && i == len(pattern)-1 {
			return true
		}
		if i >= len(path) {
			return false
		}
		switch {
		case strings.HasPrefix(ps, "{") && strings.HasSuffix(ps, "}"):
			if path[i] == "" {
				return false
			}
		case ps != path[i]:
			return false
		}
	}
	return len(pattern) == len(path)
}

// Canonical reports whether raw, a request path exactly as the client sent
// it (before any decoding or cleaning), is in canonical form: no empty
// segment (a "//" or a trailing "/"), no "." or ".." segment (also when
// percent-encoded), no encoded or literal path separator ("%2F", "%5C",
// "\\") and no malformed escape. The gateway matches its table against
// the cleaned path, while a service's router sees the raw one and redirects
// or routes it differently; refusing every non-canonical path leaves no
// path on which the two could disagree (a "/contracts/1/executed/." once
// matched the catch-all rule instead of the admin-only one).
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
