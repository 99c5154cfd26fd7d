package auth

import (
	"slices"
	"strings"
)

// ScopeAdmin is the scope of the administrative routes (users, teams, keys,
// tokens, templates and every admin-only route); only a token with the
// admin role may hold it.
const ScopeAdmin = "admin"

// ScopeResources are the resources an integration token is scoped to; each
// comes as "<resource>:read" and "<resource>:write". Companies, notes,
// tasks and CSV belong to their parent resource.
var ScopeResources = []string{"contacts", "leads", "deals", "contracts", "emails", "webhooks"}

// ValidScope reports a scope name of the fixed list.
func ValidScope(s string) bool {
	if s == ScopeAdmin {
		return true
	}
	res, access, ok := strings.Cut(s, ":")
	return ok && (access == "read" || access == "write") && slices.Contains(ScopeResources, res)
}

// AllScopes is every valid scope name, in a stable order.
func AllScopes() []string {
	out := make([]string, 0, 2*len(ScopeResources)+1)
	for _, r := range ScopeResources {
		out = append(out, r+":read", r+":write")
	}
	return append(out, ScopeAdmin)
}

// Granting lists the scopes that cover need: need itself and, for
// "<resource>:read", "<resource>:write" (writing implies reading). Code
// that checks scopes somewhere else than GrantsScope (a query's filter)
// takes the rule from here.
func Granting(need string) []string {
	if res, ok := strings.CutSuffix(need, ":read"); ok {
		return []string{need, res + ":write"}
	}
	return []string{need}
}

// GrantsScope reports whether granted covers need (see Granting).
func GrantsScope(granted []string, need string) bool {
	for _, g := range Granting(need) {
		if slices.Contains(granted, g) {
			return true
		}
	}
	return false
}

// Scoped reports claims of an integration token, which carry the token's
// scopes; a person's access token has none and is limited by role only.
func (c *Claims) Scoped() bool { return c.Scopes != nil }

// Allows reports whether the caller may use a route needing scope: always
// for a person, per the token's scopes for an integration token.
func (c *Claims) Allows(scope string) bool { return !c.Scoped() || GrantsScope(c.Scopes, scope) }
