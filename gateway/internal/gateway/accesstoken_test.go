package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// fakeTokens plays identity's /internal/access-tokens/verify: each known
// token is a service user with a role and scopes; the answer carries an
// access token minted for that user, as identity's does.
type fakeTokens struct {
	e        *env
	mu       sync.Mutex
	grants   map[string]identityapi.VerifiedAccessToken
	verifies int
	down     bool
}

func (f *fakeTokens) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(auth.InternalHeader) != testSecret {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var in struct{ Token string }
	_ = json.NewDecoder(r.Body).Decode(&in)
	f.mu.Lock()
	f.verifies++
	g, ok := f.grants[in.Token]
	down := f.down
	f.mu.Unlock()
	if down {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if !ok {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	now := time.Now()
	g.AccessToken = f.e.iss.Sign(f.e.t, auth.Claims{
		RegisteredClaims: jwt.RegisteredClaims{Issuer: auth.Issuer, Audience: jwt.ClaimStrings{auth.Audience},
			Subject: strconv.FormatInt(g.UserID, 10), IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute))},
		Role: g.Role, Scopes: g.Scopes,
	})
	g.ExpiresIn = 60
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"success": true, "data": g})
}

func (f *fakeTokens) set(token string, g *identityapi.VerifiedAccessToken) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if g == nil {
		delete(f.grants, token)
		return
	}
	f.grants[token] = *g
}

func (f *fakeTokens) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.verifies
}

func newTokenEnv(t *testing.T, mutate func(*Config)) (*env, *fakeTokens) {
	t.Helper()
	e := newEnv(t, mutate)
	f := &fakeTokens{e: e, grants: map[string]identityapi.VerifiedAccessToken{}}
	e.tokensMu.Lock()
	e.tokens = f
	e.tokensMu.Unlock()
	return e, f
}

func patToken(tag string) string {
	return identityapi.AccessTokenPrefix + tag + strings.Repeat("x", 43-len(tag))
}

// TestAccessTokenForwardsMintedJWT: the service sees the minted access
// token of the token's service user, never the secret.
func TestAccessTokenForwardsMintedJWT(t *testing.T) {
	t.Parallel()
	e, f := newTokenEnv(t, nil)
	tok := patToken("fwd")
	f.set(tok, &identityapi.VerifiedAccessToken{ID: 1, UserID: 77, Role: auth.RoleUser, Scopes: []string{"contacts:write"}})

	s := echoed(t, e.do(req{path: "/api/contacts?page=1", token: tok}))
	bearer, _ := auth.BearerToken(s.Header.Get("Authorization"))
	claims, err := e.iss.Verifier(t).Verify(t.Context(), bearer)
	if err != nil {
		t.Fatalf("forwarded credential %q is not a valid access token: %v", bearer, err)
	}
	if diff := cmp.Diff([]string{"contacts:write"}, claims.Scopes); diff != "" || claims.UserID() != 77 {
		t.Fatalf("forwarded claims %+v, scopes (-want +got):\n%s", claims, diff)
	}
	// Cached: a second call does not ask identity again.
	echoed(t, e.do(req{path: "/api/companies", token: tok}))
	if n := f.calls(); n != 1 {
		t.Fatalf("identity asked %d times, want 1 (cached)", n)
	}
	// Rate limited per service user, like a user.
	r := e.do(req{path: "/api/contacts", token: tok})
	if r.header.Get("RateLimit-Limit") != strconv.Itoa(e.cfg.UserPerMinute) {
		t.Fatalf("RateLimit-Limit = %q, want the per-user limit %d", r.header.Get("RateLimit-Limit"), e.cfg.UserPerMinute)
	}
}

// TestAccessTokenBadInput: every refusal is a 401 problem, and malformed
// tokens never reach identity. A 1 MB token is over the header limit,
// refused with 431 before any parsing (TestHeaderBlockLimit).
func TestAccessTokenBadInput(t *testing.T) {
	t.Parallel()
	e, f := newTokenEnv(t, nil)
	good := patToken("good")
	f.set(good, &identityapi.VerifiedAccessToken{ID: 2, UserID: 78, Role: auth.RoleUser, Scopes: []string{"leads:read"}})
	apiKey := "crm_live_" + strings.Repeat("k", 43)
	e.identity.AddKey(apiKey, identityapi.VerifiedKey{})
	tests := []struct {
		name   string
		path   string
		header map[string]string
		status int
		code   string
		asks   bool
	}{
		{"unknown token", "/api/leads", map[string]string{"Authorization": "Bearer " + patToken("unknown")}, 401, "unauthenticated", true},
		{"truncated token", "/api/leads", map[string]string{"Authorization": "Bearer " + good[:20]}, 401, "unauthenticated", true},
		{"malformed token", "/api/leads", map[string]string{"Authorization": "Bearer crm_pat_<script>"}, 401, "unauthenticated", false},
		{"prefix only", "/api/leads", map[string]string{"Authorization": "Bearer crm_pat_"}, 401, "unauthenticated", false},
		{"long token", "/api/leads", map[string]string{"Authorization": "Bearer crm_pat_" + strings.Repeat("a", 4000)}, 401, "unauthenticated", false},
		{"API key as bearer", "/api/leads", map[string]string{"Authorization": "Bearer " + apiKey}, 401, "unauthenticated", false},
		{"token in X-API-Key", "/api/public/leads", map[string]string{"X-API-Key": good, "Content-Type": "application/json"}, 401, "unauthenticated", false},
		{"token as bearer on the public API", "/api/public/leads", map[string]string{"Authorization": "Bearer " + good}, 401, "unauthenticated", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := f.calls()
			method := http.MethodGet
			if strings.HasPrefix(tc.path, "/api/public/") {
				method = http.MethodPost
			}
			wantProblem(t, e.do(req{method: method, path: tc.path, header: tc.header}), tc.status, tc.code)
			if !tc.asks && f.calls() != before {
				t.Errorf("identity was asked about a token that cannot be one")
			}
		})
	}
}

// TestAccessTokenRevocationWithinTTL: a revoked (or expired) token is
// refused once the cached verdict ends.
func TestAccessTokenRevocationWithinTTL(t *testing.T) {
	t.Parallel()
	e, f := newTokenEnv(t, func(c *Config) { c.APIKeyCacheTTL = 200 * time.Millisecond })
	tok := patToken("revoke")
	f.set(tok, &identityapi.VerifiedAccessToken{ID: 3, UserID: 79, Role: auth.RoleUser, Scopes: []string{"deals:read"}})
	echoed(t, e.do(req{path: "/api/deals", token: tok}))
	f.set(tok, nil)
	time.Sleep(250 * time.Millisecond)
	p := wantProblem(t, e.do(req{path: "/api/deals", token: tok}), 401, "unauthenticated")
	if p.Detail != "invalid, revoked or expired access token" {
		t.Fatalf("detail %q", p.Detail)
	}
}

// TestAccessTokenScopeEveryRoute is the one table test over every
// documented operation: a token holding every scope but the operation's
// own is refused with 403 insufficient_scope and the RFC 6750 challenge,
// and the same token with that scope passes the gateway. The list is the
// declarations the gateway routes by (Routes), so a new route cannot be
// left out.
func TestAccessTokenScopeEveryRoute(t *testing.T) {
	t.Parallel()
	e, f := newTokenEnv(t, func(c *Config) { c.UserPerMinute = 100_000 })
	ids := regexp.MustCompile(`\{[^}]+\}`)
	unscoped := map[string]bool{}
	n := 0
	for _, op := range Routes() {
		if op.Auth != route.JWT && op.Auth != route.Admin {
			continue
		}
		need := op.Scope()
		if need == "" {
			unscoped[op.Method+" "+op.Path] = true
			continue
		}
		path := "/api" + ids.ReplaceAllString(op.Path, "12")
		var others []string
		for _, s := range auth.AllScopes() {
			if s != need && !(strings.HasSuffix(need, ":read") && s == strings.TrimSuffix(need, ":read")+":write") {
				others = append(others, s)
			}
		}
		n++
		lacking, holding := patToken(fmt.Sprintf("l%d", n)), patToken(fmt.Sprintf("h%d", n))
		f.set(lacking, &identityapi.VerifiedAccessToken{ID: int64(n), UserID: 500, Role: auth.RoleAdmin, Scopes: others})
		f.set(holding, &identityapi.VerifiedAccessToken{ID: int64(n), UserID: 501, Role: auth.RoleAdmin, Scopes: []string{need}})
		t.Run(op.Method+" "+op.Path, func(t *testing.T) {
			r := e.do(req{method: op.Method, path: path, token: lacking, body: strings.NewReader("{}"),
				header: map[string]string{"Content-Type": "application/json"}})
			p := wantProblem(t, r, http.StatusForbidden, "insufficient_scope")
			want := `Bearer error="insufficient_scope", scope="` + need + `"`
			if got := r.header.Get("WWW-Authenticate"); got != want || !strings.Contains(p.Detail, need) {
				t.Errorf("WWW-Authenticate %q detail %q, want %q", got, p.Detail, want)
			}
			r = e.do(req{method: op.Method, path: path, token: holding, body: strings.NewReader("{}"),
				header: map[string]string{"Content-Type": "application/json"}})
			if r.status == http.StatusForbidden || r.status == http.StatusUnauthorized {
				t.Errorf("with the %s scope: %d %s", need, r.status, r.body)
			}
		})
	}
	if diff := cmp.Diff(map[string]bool{"GET /auth/me": true}, unscoped); diff != "" {
		t.Errorf("operations any token may call (-want +got):\n%s", diff)
	}
	if n < 100 {
		t.Errorf("only %d scoped operations checked", n)
	}
}

// TestAccessTokenAdminRoutesNeedAdminRole: the admin scope cannot be held
// by a user-role token, and a user-role token never passes an admin route.
func TestAccessTokenAdminRoutesNeedAdminRole(t *testing.T) {
	t.Parallel()
	e, f := newTokenEnv(t, nil)
	tok := patToken("userrole")
	f.set(tok, &identityapi.VerifiedAccessToken{ID: 9, UserID: 90, Role: auth.RoleUser, Scopes: []string{"admin"}})
	wantProblem(t, e.do(req{path: "/api/users", token: tok}), 403, "forbidden")
	wantProblem(t, e.do(req{method: http.MethodPost, path: "/api/access-tokens", token: patToken("none")}), 401, "unauthenticated")
}

// TestAccessTokenWebhooksByScope: webhooks are admin routes for people,
// but an integration token reaches them with the webhooks scope whatever
// its role, since an integration subscribes for itself.
func TestAccessTokenWebhooksByScope(t *testing.T) {
	t.Parallel()
	e, f := newTokenEnv(t, nil)
	write, read := patToken("hookwrite"), patToken("hookread")
	f.set(write, &identityapi.VerifiedAccessToken{ID: 11, UserID: 110, Role: auth.RoleUser, Scopes: []string{"webhooks:write"}})
	f.set(read, &identityapi.VerifiedAccessToken{ID: 12, UserID: 120, Role: auth.RoleUser, Scopes: []string{"webhooks:read", "contacts:write"}})
	for _, tt := range []struct {
		method, path string
		token        string
		wantScope    string // "" when the gateway lets it through
	}{
		{http.MethodPost, "/api/webhooks", write, ""},
		{http.MethodGet, "/api/events", write, ""},
		{http.MethodGet, "/api/webhooks/3/deliveries", read, ""},
		{http.MethodGet, "/api/events", read, ""},
		{http.MethodPost, "/api/webhooks", read, "webhooks:write"},
		{http.MethodDelete, "/api/webhooks/3", read, "webhooks:write"},
	} {
		r := e.do(req{method: tt.method, path: tt.path, token: tt.token, body: strings.NewReader("{}"),
			header: map[string]string{"Content-Type": "application/json"}})
		if tt.wantScope != "" {
			wantProblem(t, r, http.StatusForbidden, "insufficient_scope")
			continue
		}
		if s := echoed(t, r); s.Service != SvcWebhooks {
			t.Errorf("%s %s reached %s", tt.method, tt.path, s.Service)
		}
	}
}

// TestAccessTokenRateLimitPerServiceUser: each token is limited as its
// own user, so one busy integration cannot use up another's quota.
func TestAccessTokenRateLimitPerServiceUser(t *testing.T) {
	t.Parallel()
	e, f := newTokenEnv(t, func(c *Config) { c.UserPerMinute = 2 })
	busy, other := patToken("busy"), patToken("other")
	f.set(busy, &identityapi.VerifiedAccessToken{ID: 11, UserID: 111, Role: auth.RoleUser, Scopes: []string{"contacts:read"}})
	f.set(other, &identityapi.VerifiedAccessToken{ID: 12, UserID: 112, Role: auth.RoleUser, Scopes: []string{"contacts:read"}})
	for range 2 {
		echoed(t, e.do(req{path: "/api/contacts", token: busy}))
	}
	r := e.do(req{path: "/api/contacts", token: busy})
	wantProblem(t, r, http.StatusTooManyRequests, "rate_limited")
	if r.header.Get("Retry-After") == "" {
		t.Error("Retry-After missing on 429")
	}
	echoed(t, e.do(req{path: "/api/contacts", token: other}))
}

// TestAccessTokenIdentityDown: when identity cannot answer, a token not in
// the cache is 503 (retry), never let through and never a 401 that would
// make an integration discard a good token.
func TestAccessTokenIdentityDown(t *testing.T) {
	t.Parallel()
	e, f := newTokenEnv(t, nil)
	tok := patToken("down")
	f.set(tok, &identityapi.VerifiedAccessToken{ID: 13, UserID: 113, Role: auth.RoleUser, Scopes: []string{"leads:read"}})
	f.mu.Lock()
	f.down = true
	f.mu.Unlock()
	r := e.do(req{path: "/api/leads", token: tok})
	wantProblem(t, r, http.StatusServiceUnavailable, "upstream_unavailable")
	if r.header.Get("Retry-After") == "" {
		t.Error("Retry-After missing on 503")
	}
	if n := e.ups[SvcLeads].calls(); n != 0 {
		t.Errorf("leads received %d calls while the token could not be verified", n)
	}
}
