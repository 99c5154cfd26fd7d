package gateway

import (
	"bufio"
	"encoding/base64"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/authtest"
	"github.com/opencrm/crm/pkg/contract/identityapi"
)

func claimsFor(mut func(*auth.Claims)) auth.Claims {
	now := time.Now()
	c := auth.Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: auth.Issuer, Audience: jwt.ClaimStrings{auth.Audience}, Subject: "7",
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(15 * time.Minute)),
		},
		Role: auth.RoleUser,
	}
	mut(&c)
	return c
}

func TestBadTokensAre401WithoutUpstreamCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	b64 := base64.RawURLEncoding.EncodeToString
	otherKid := authtest.New(t)
	otherKid.Kid = "other-key"
	sameKidOtherKey := authtest.New(t)
	tests := []struct {
		name   string
		header string
	}{
		{"missing", ""},
		{"not bearer", "Basic dXNlcjpwYXNz"},
		{"empty bearer", "Bearer "},
		{"malformed", "Bearer not-a-jwt"},
		{"garbage segments", "Bearer a.b.c"},
		{"expired", "Bearer " + e.iss.Sign(t, claimsFor(func(c *auth.Claims) {
			c.IssuedAt = jwt.NewNumericDate(time.Now().Add(-2 * time.Hour))
			c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Hour))
		}))},
		{"wrong audience", "Bearer " + e.iss.Sign(t, claimsFor(func(c *auth.Claims) { c.Audience = jwt.ClaimStrings{"other-api"} }))},
		{"wrong issuer", "Bearer " + e.iss.Sign(t, claimsFor(func(c *auth.Claims) { c.Issuer = "evil" }))},
		{"no expiry", "Bearer " + e.iss.Sign(t, claimsFor(func(c *auth.Claims) { c.ExpiresAt = nil }))},
		{"bad role", "Bearer " + e.iss.Sign(t, claimsFor(func(c *auth.Claims) { c.Role = "root" }))},
		{"unknown kid", "Bearer " + otherKid.User(t, 7)},
		{"wrong signature", "Bearer " + sameKidOtherKey.User(t, 7)},
		{"alg none", "Bearer " + b64([]byte(`{"alg":"none","typ":"JWT","kid":"test-key"}`)) + "." +
			b64([]byte(`{"iss":"crm-identity","aud":"crm-api","sub":"7","role":"admin","exp":`+strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)+`}`)) + "."},
		{"30 KB of dots", "Bearer " + strings.Repeat(".", 30<<10)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.header != "" {
				h["Authorization"] = tc.header
			}
			r := e.do(req{path: "/api/contacts", header: h})
			wantProblem(t, r, http.StatusUnauthorized, "unauthenticated")
			if got := r.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
				t.Errorf("WWW-Authenticate = %q", got)
			}
		})
	}
	if n := e.ups[SvcContacts].calls(); n != 0 {
		t.Errorf("contacts received %d calls, want 0", n)
	}
	// A valid token passes, which shows the cases above failed on the token.
	echoed(t, e.do(req{path: "/api/contacts", token: e.iss.User(t, 7)}))
}

// adminRoutes is every admin-only operation (docs/api.md, Authentication).
var adminRoutes = []struct{ method, path, service, upstreamPath string }{
	{"GET", "/api/contacts/export", SvcContacts, "/contacts/export"},
	{"GET", "/api/contacts/template", SvcContacts, "/contacts/template"},
	{"POST", "/api/contacts/import", SvcContacts, "/contacts/import"},
	{"GET", "/api/leads/export", SvcLeads, "/leads/export"},
	{"GET", "/api/leads/template", SvcLeads, "/leads/template"},
	{"DELETE", "/api/contracts/5/executed", SvcContracts, "/contracts/5/executed"},
	{"GET", "/api/contract-templates", SvcContracts, "/contract-templates"},
	{"POST", "/api/contract-templates", SvcContracts, "/contract-templates"},
	{"GET", "/api/contract-templates/3", SvcContracts, "/contract-templates/3"},
	{"PUT", "/api/contract-templates/3", SvcContracts, "/contract-templates/3"},
	{"DELETE", "/api/contract-templates/3", SvcContracts, "/contract-templates/3"},
	{"GET", "/api/contract-templates/tags", SvcContracts, "/contract-templates/tags"},
	{"GET", "/api/contract-templates/tags/pdf", SvcContracts, "/contract-templates/tags/pdf"},
	{"GET", "/api/users", SvcIdentity, "/users"},
	{"POST", "/api/users", SvcIdentity, "/users"},
	{"GET", "/api/users/2", SvcIdentity, "/users/2"},
	{"PUT", "/api/users/2", SvcIdentity, "/users/2"},
	{"DELETE", "/api/users/2", SvcIdentity, "/users/2"},
	{"GET", "/api/teams", SvcIdentity, "/teams"},
	{"POST", "/api/teams", SvcIdentity, "/teams"},
	{"PUT", "/api/teams/4", SvcIdentity, "/teams/4"},
	{"DELETE", "/api/teams/4", SvcIdentity, "/teams/4"},
	{"GET", "/api/api-keys", SvcIdentity, "/api-keys"},
	{"POST", "/api/api-keys", SvcIdentity, "/api-keys"},
	{"DELETE", "/api/api-keys/9", SvcIdentity, "/api-keys/9"},
	{"GET", "/api/intake/submissions", SvcIntake, "/intake/submissions"},
	{"GET", "/api/intake/submissions/8", SvcIntake, "/intake/submissions/8"},
	{"POST", "/api/deal-stages", SvcDeals, "/deal-stages"},
	{"PUT", "/api/deal-stages/2", SvcDeals, "/deal-stages/2"},
	{"DELETE", "/api/deal-stages/2", SvcDeals, "/deal-stages/2"},
	{"POST", "/api/auth/keys/rotate", SvcIdentity, "/auth/keys/rotate"},
	{"GET", "/api/webhooks", SvcWebhooks, "/webhooks"},
	{"POST", "/api/webhooks", SvcWebhooks, "/webhooks"},
	{"POST", "/api/webhooks/4/deliveries/9/retry", SvcWebhooks, "/webhooks/4/deliveries/9/retry"},
	{"GET", "/api/events", SvcWebhooks, "/events"},
}

func TestAdminRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	user, admin := e.iss.User(t, 7), e.iss.Admin(t, 1)
	for _, rt := range adminRoutes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			wantProblem(t, e.do(req{method: rt.method, path: rt.path, token: user}), http.StatusForbidden, "forbidden")
			wantProblem(t, e.do(req{method: rt.method, path: rt.path}), http.StatusUnauthorized, "unauthenticated")
			s := echoed(t, e.do(req{method: rt.method, path: rt.path, token: admin}))
			if s.Service != rt.service || s.Path != rt.upstreamPath || s.Method != rt.method {
				t.Errorf("reached %s %s %s, want %s %s %s", s.Service, s.Method, s.Path, rt.service, rt.method, rt.upstreamPath)
			}
			if got := s.Header.Get("Authorization"); got != "Bearer "+admin {
				t.Errorf("Authorization forwarded as %q", got)
			}
		})
	}
}

func TestKeyRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const good, revoked = "crm_live_good_key_0001", "crm_live_revoked_key_02"
	e.identity.AddKey(good, identityapi.VerifiedKey{})
	e.identity.RevokeKey(revoked)

	tests := []struct {
		name   string
		header map[string]string
		detail string
	}{
		{"no key", nil, "missing API key"},
		{"unknown key", map[string]string{"X-API-Key": "crm_live_unknown"}, "invalid or revoked"},
		{"revoked key", map[string]string{"X-API-Key": revoked}, "invalid or revoked"},
		{"oversized key", map[string]string{"X-API-Key": strings.Repeat("k", 300)}, "invalid API key"},
		{"bearer instead of key", map[string]string{"Authorization": "Bearer " + e.iss.Admin(t, 1)}, "bearer tokens are not accepted"},
		{"bearer with a valid key", map[string]string{"Authorization": "Bearer " + e.iss.Admin(t, 1), "X-API-Key": good}, "bearer tokens are not accepted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(req{method: "POST", path: "/api/public/leads", header: tc.header, body: strings.NewReader(`{}`)})
			p := wantProblem(t, r, http.StatusUnauthorized, "unauthenticated")
			if !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("detail %q, want it to contain %q", p.Detail, tc.detail)
			}
			if got := r.header.Get("WWW-Authenticate"); got != identityapi.KeyChallenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, identityapi.KeyChallenge)
			}
		})
	}
	if n := e.ups[SvcIntake].calls(); n != 0 {
		t.Fatalf("intake received %d calls, want 0", n)
	}

	s := echoed(t, e.do(req{method: "POST", path: "/api/public/leads?src=form", header: map[string]string{"X-API-Key": good},
		body: strings.NewReader(`{"first_name":"A"}`)}))
	if s.Service != SvcIntake || s.Path != "/public/leads" || s.Query != "src=form" || s.Header.Get("X-API-Key") != good {
		t.Errorf("intake saw %+v", s)
	}
}

func TestRevokedKeyIsRefusedOnceTheCacheExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const key = "crm_live_soon_revoked"
	e.identity.AddKey(key, identityapi.VerifiedKey{})
	clock := &fakeClock{now: time.Now()}
	e.g.keys.SetClock(clock.Now)
	post := func() response {
		return e.do(req{method: "POST", path: "/api/public/leads", header: map[string]string{"X-API-Key": key}, body: strings.NewReader(`{}`)})
	}
	echoed(t, post())
	echoed(t, post())
	if n := e.identity.Verifications(); n != 1 {
		t.Errorf("identity verified %d times, want 1 (cached)", n)
	}
	e.identity.RevokeKey(key)
	clock.Add(e.cfg.APIKeyCacheTTL)
	wantProblem(t, post(), http.StatusUnauthorized, "unauthenticated")
	if n := e.identity.Verifications(); n != 2 {
		t.Errorf("identity verified %d times, want 2", n)
	}
	if e.cfg.APIKeyCacheTTL > 5*time.Second {
		t.Errorf("APIKeyCacheTTL = %v, want ≤ 5s", e.cfg.APIKeyCacheTTL)
	}
}

// TestConcurrentMissesAskIdentityOnce: requests that find no cached
// verdict at the same moment (a busy key whose entry just expired) share
// one question to identity instead of a burst of them.
func TestConcurrentMissesAskIdentityOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const key = "crm_live_busy"
	e.identity.AddKey(key, identityapi.VerifiedKey{})
	gate := make(chan struct{})
	e.identity.Hold(gate)
	const n = 20
	statuses := make(chan int, n)
	for range n {
		go func() {
			r := e.do(req{method: "POST", path: "/api/public/leads", header: map[string]string{"X-API-Key": key}, body: strings.NewReader(`{}`)})
			statuses <- r.status
		}()
	}
	time.Sleep(100 * time.Millisecond) // let them all miss the cache
	close(gate)
	for range n {
		if s := <-statuses; s != http.StatusOK {
			t.Errorf("status = %d, want 200", s)
		}
	}
	if got := e.identity.Verifications(); got != 1 {
		t.Errorf("identity verified %d times for %d concurrent requests, want 1", got, n)
	}
}

func TestKeyVerificationUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.identity.FailWith(http.StatusInternalServerError)
	r := e.do(req{method: "POST", path: "/api/public/leads", header: map[string]string{"X-API-Key": "crm_live_x"}, body: strings.NewReader(`{}`)})
	wantProblem(t, r, http.StatusServiceUnavailable, "upstream_unavailable")
	if r.header.Get("Retry-After") == "" {
		t.Error("Retry-After missing")
	}
}

// TestServerErrorsAreProblems sends malformed requests and requests with
// ambiguous framing (smuggling attempts); the answers are problem+json,
// without the parser's text, and the connection is closed.
func TestServerErrorsAreProblems(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, raw := range []string{
		"GET /api/contacts HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
		"BLAH\r\n\r\n",
		"POST /api/contacts HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
		"POST /api/contacts HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"POST /api/contacts HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
		"POST /api/contacts HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write([]byte(raw)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		r := response{status: resp.StatusCode, header: resp.Header, body: readAll(t, resp)}
		_ = resp.Body.Close()
		_ = conn.Close()
		wantProblem(t, r, http.StatusBadRequest, "bad_request")
		if !resp.Close {
			t.Errorf("%q: connection kept open", raw)
		}
	}
}
