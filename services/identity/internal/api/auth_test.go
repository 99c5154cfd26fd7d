package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/auth"
)

func TestLogin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{loginFailures: 10})
	u := e.createUser("Ann Smith", uniqueEmail("ann"), "ann-password-1", "user", nil)

	s := e.login(" "+u.Email+" ", "ann-password-1")
	if s.TokenType != "Bearer" || s.ExpiresIn != 900 || s.AccessToken == "" || s.RefreshToken == "" {
		t.Fatalf("unexpected session %+v", s)
	}
	if diff := cmp.Diff(u, s.User); diff != "" {
		t.Fatalf("user (-want +got):\n%s", diff)
	}
	// Emails match case-insensitively.
	e.login(adminEmail[:1]+"DMIN@EXAMPLE.COM", adminPassword)

	v := jwksVerifier(t, e)
	c, err := v.Verify(context.Background(), s.AccessToken)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	want := struct {
		Sub, Role, Name, Iss string
		Aud                  []string
		TTL                  int64
	}{strconv.FormatInt(u.ID, 10), "user", "Ann Smith", auth.Issuer, []string{auth.Audience}, 900}
	got := want
	got.Sub, got.Role, got.Name, got.Iss, got.Aud = c.Subject, c.Role, c.Name, c.Issuer, c.Audience
	got.TTL = c.ExpiresAt.Unix() - c.IssuedAt.Unix()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("claims (-want +got):\n%s", diff)
	}
}

func TestLoginBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{loginFailures: 0})
	tests := []struct {
		name   string
		r      req
		status int
		code   string
		fields []string
	}{
		{"malformed json", req{body: `{"email":`}, 400, "malformed_json", nil},
		{"not an object", req{body: `[1]`}, 400, "malformed_json", nil},
		{"wrong content type", req{body: `email=a`, contentType: "application/x-www-form-urlencoded"}, 415, "unsupported_media_type", nil},
		{"missing fields", req{body: `{}`}, 422, "validation_failed", []string{"email", "password"}},
		{"wrong type", req{body: `{"email":1,"password":"x"}`}, 422, "validation_failed", []string{"email"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.method, tc.r.path = "POST", "/auth/login"
			wantProblem(t, e.do(tc.r), tc.status, tc.code, tc.fields...)
		})
	}
}

func TestLoginFailuresLookAlike(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{loginFailures: 0})
	gone := e.createUser("Gone", uniqueEmail("gone"), "gone-password-1", "user", nil)
	decode(t, e.do(req{method: "DELETE", path: "/users/" + strconv.FormatInt(gone.ID, 10), token: e.admin}), 200, nil)

	attempt := func(email, pw string) (string, string, string) {
		rec := e.do(req{method: "POST", path: "/auth/login", body: mustJSON(map[string]string{"email": email, "password": pw})})
		b := wantProblem(t, rec, http.StatusUnauthorized, "unauthenticated")
		return b.Code, b.Detail, rec.Header().Get("WWW-Authenticate")
	}
	wrongCode, wrongDetail, wrongHdr := attempt(adminEmail, "not-the-password")
	for name, got := range map[string][]string{
		"unknown email":    sliceOf(attempt("nobody@example.com", "not-the-password")),
		"deactivated user": sliceOf(attempt(gone.Email, "gone-password-1")),
		"NUL in the email": sliceOf(attempt("a\x00@example.com", "not-the-password")),
	} {
		if diff := cmp.Diff([]string{wrongCode, wrongDetail, wrongHdr}, got); diff != "" {
			t.Errorf("%s differs from wrong password (-want +got):\n%s", name, diff)
		}
	}
}

func sliceOf(a, b, c string) []string { return []string{a, b, c} }

func TestLoginThrottle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{loginFailures: 3})
	u := e.createUser("Thr", uniqueEmail("thr"), "thr-password-1", "user", nil)
	login := func(pw, remote string, hdr map[string]string) *httptest.ResponseRecorder {
		return e.do(req{method: "POST", path: "/auth/login", remote: remote, header: hdr,
			body: mustJSON(map[string]string{"email": u.Email, "password": pw})})
	}
	for i := 0; i < 3; i++ {
		wantProblem(t, login("wrong-password", "", nil), 401, "unauthenticated")
	}
	// Blocked now, even with the right password.
	rec := login("thr-password-1", "", nil)
	wantProblem(t, rec, http.StatusTooManyRequests, "rate_limited")
	if ra, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || ra < 1 || ra > 900 {
		t.Fatalf("Retry-After = %q", rec.Header().Get("Retry-After"))
	}
	// An untrusted peer cannot escape by claiming another address.
	wantProblem(t, login("thr-password-1", "", map[string]string{"X-Forwarded-For": "198.51.100.1"}), 429, "rate_limited")
	// Another client address (via the trusted local proxy) is counted apart.
	rec = login("thr-password-1", "127.0.0.1:5000", map[string]string{"X-Forwarded-For": "198.51.100.1"})
	decode(t, rec, http.StatusOK, nil)
	// The email is compared case-insensitively for throttling too.
	rec = e.do(req{method: "POST", path: "/auth/login",
		body: mustJSON(map[string]string{"email": "  " + upper(u.Email), "password": "thr-password-1"})})
	wantProblem(t, rec, 429, "rate_limited")
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}

// TestLoginWithoutRedis: login never runs unthrottled; with Redis down it is
// briefly unavailable (503 with Retry-After), not a 500.
func TestLoginWithoutRedis(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{loginFailures: 3})
	u := e.createUser("Nor", uniqueEmail("nor"), "nor-password-1", "user", nil)
	// The same database served by a replica whose Redis is down.
	_, e.h = build(t, e.db, options{loginFailures: 3, redisAddr: "127.0.0.1:1"})
	rec := e.do(req{method: "POST", path: "/auth/login",
		body: mustJSON(map[string]string{"email": u.Email, "password": "nor-password-1"})})
	wantProblem(t, rec, http.StatusServiceUnavailable, "upstream_unavailable")
	if rec.Header().Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
}

func TestLoginSuccessResetsThrottle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{loginFailures: 2})
	u := e.createUser("Res", uniqueEmail("res"), "res-password-1", "user", nil)
	bad := mustJSON(map[string]string{"email": u.Email, "password": "wrong-password"})
	wantProblem(t, e.do(req{method: "POST", path: "/auth/login", body: bad}), 401, "unauthenticated")
	e.login(u.Email, "res-password-1")
	wantProblem(t, e.do(req{method: "POST", path: "/auth/login", body: bad}), 401, "unauthenticated")
	e.login(u.Email, "res-password-1")
}

func TestRefreshBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	tests := []struct {
		name   string
		body   string
		ct     string
		status int
		code   string
		fields []string
	}{
		{"unknown token", `{"refresh_token":"nope"}`, "", 401, "unauthenticated", nil},
		{"missing token", `{}`, "", 422, "validation_failed", []string{"refresh_token"}},
		{"malformed json", `{"refresh_token"`, "", 400, "malformed_json", nil},
		{"wrong content type", `refresh_token=x`, "text/plain", 415, "unsupported_media_type", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do(req{method: "POST", path: "/auth/refresh", body: tc.body, contentType: tc.ct})
			wantProblem(t, rec, tc.status, tc.code, tc.fields...)
		})
	}
}

func TestConcurrentRefreshHasOneWinner(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	u := e.createUser("Race", uniqueEmail("race"), "race-password-1", "user", nil)
	for round := 0; round < 5; round++ {
		s := e.login(u.Email, "race-password-1")
		codes := make([]int, 2)
		concurrently(len(codes), func(i int) { codes[i] = e.refresh(s.RefreshToken).Code })
		ok := 0
		for _, c := range codes {
			switch c {
			case http.StatusOK:
				ok++
			case http.StatusUnauthorized:
			default:
				t.Fatalf("unexpected status %d", c)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d winners (%v), want exactly 1", round, ok, codes)
		}
	}
}

// TestLogout keeps the answers of logout over HTTP; that it revokes the
// family, is idempotent and silent about unknown tokens, and the rotation
// and deactivation rules of sessions, are tested on the service
// (identity's sessions_test.go).
func TestLogout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	u := e.createUser("Out", uniqueEmail("out"), "out-password-1", "user", nil)
	s := e.login(u.Email, "out-password-1")
	var r envelope[sessionOut]
	decode(t, e.refresh(s.RefreshToken), 200, &r)

	body := mustJSON(map[string]string{"refresh_token": r.Data.RefreshToken})
	decode(t, e.do(req{method: "POST", path: "/auth/logout", body: body}), 200, nil)
	wantProblem(t, e.refresh(r.Data.RefreshToken), 401, "unauthenticated")
	wantProblem(t, e.do(req{method: "POST", path: "/auth/logout", body: `{}`}), 422, "validation_failed", "refresh_token")
	wantProblem(t, e.do(req{method: "POST", path: "/auth/logout", body: `nope`}), 400, "malformed_json")
}

func TestMe(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	u := e.createUser("Me", uniqueEmail("me"), "me-password-1", "user", nil)
	s := e.login(u.Email, "me-password-1")
	var got envelope[userOut]
	decode(t, e.do(req{method: "GET", path: "/auth/me", token: s.AccessToken}), 200, &got)
	if diff := cmp.Diff(u, got.Data); diff != "" {
		t.Fatalf("me (-want +got):\n%s", diff)
	}
	wantProblem(t, e.do(req{method: "GET", path: "/auth/me"}), 401, "unauthenticated")
	wantProblem(t, e.do(req{method: "GET", path: "/auth/me", token: "abc.def.ghi"}), 401, "unauthenticated")

	// A deactivated user's still-valid access token no longer reads /me.
	decode(t, e.do(req{method: "DELETE", path: "/users/" + strconv.FormatInt(u.ID, 10), token: e.admin}), 200, nil)
	wantProblem(t, e.do(req{method: "GET", path: "/auth/me", token: s.AccessToken}), 401, "unauthenticated")
}

// jwksVerifier verifies tokens the way every other service does: through
// the published JWKS over HTTP.
func jwksVerifier(t *testing.T, e *env) *auth.Verifier {
	t.Helper()
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	v, err := auth.NewVerifier(auth.NewJWKS(srv.URL+"/auth/jwks"), auth.Issuer, auth.Audience)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestJWKSAndKeyRotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{secretKey: "0123456789abcdef0123456789abcdef"})
	u := e.createUser("Key", uniqueEmail("key"), "key-password-1", "user", nil)
	before := e.login(u.Email, "key-password-1")

	var rot envelope[map[string]string]
	decode(t, e.do(req{method: "POST", path: "/auth/keys/rotate", token: e.admin}), 200, &rot)
	after := e.login(u.Email, "key-password-1")

	var set auth.JWKSet
	decode(t, e.do(req{method: "GET", path: "/auth/jwks"}), 200, &set)
	if len(set.Keys) != 2 || set.Keys[0].Kid != rot.Data["kid"] {
		t.Fatalf("jwks after rotation = %+v, want the new key first and the old one kept", set.Keys)
	}
	// A fresh verifier (another service) accepts tokens of both keys.
	v := jwksVerifier(t, e)
	for name, tok := range map[string]string{"old key": before.AccessToken, "new key": after.AccessToken} {
		if _, err := v.Verify(context.Background(), tok); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The service itself accepts the old token too.
	decode(t, e.do(req{method: "GET", path: "/auth/me", token: before.AccessToken}), 200, nil)

	// Non-admins cannot rotate.
	wantProblem(t, e.do(req{method: "POST", path: "/auth/keys/rotate", token: after.AccessToken}), 403, "forbidden")
}

// TestRetiredKeyWithdrawn: signing keys sign only access tokens (refresh
// tokens are opaque), so a retired key is published only while a token it
// signed can still be valid: retired within CRM_ACCESS_TTL + leeway + 1
// minute. A key rotated away after a leak is then withdrawn although it is
// among the newest keys and younger than CRM_REFRESH_TTL.
func TestRetiredKeyWithdrawn(t *testing.T) {
	t.Parallel()
	grace := accessTTL + auth.Leeway + time.Minute
	tests := []struct {
		name       string
		retiredAgo time.Duration
		published  bool
	}{
		{"retired within the grace period", grace - time.Minute, true},
		{"retired before it", grace + time.Second, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, options{})
			u := e.createUser("Leak", uniqueEmail("leak"), "leak-password-1", "user", nil)
			before := e.login(u.Email, "leak-password-1")
			var rot envelope[map[string]string]
			decode(t, e.do(req{method: "POST", path: "/auth/keys/rotate", token: e.admin}), http.StatusOK, &rot)
			var old string
			if err := e.db.QueryRow(context.Background(), `UPDATE signing_keys
				SET retired_at = now() - make_interval(secs => $1) WHERE kid <> $2 RETURNING kid`,
				tc.retiredAgo.Seconds(), rot.Data["kid"]).Scan(&old); err != nil {
				t.Fatal(err)
			}
			// A replica that loads the keys now.
			_, e.h = build(t, e.db, options{})

			var set auth.JWKSet
			decode(t, e.do(req{method: "GET", path: "/auth/jwks"}), http.StatusOK, &set)
			var kids []string
			for _, k := range set.Keys {
				kids = append(kids, k.Kid)
			}
			want := []string{rot.Data["kid"]}
			if tc.published {
				want = append(want, old)
			}
			if diff := cmp.Diff(want, kids); diff != "" {
				t.Fatalf("published kids (-want +got):\n%s", diff)
			}
			_, err := jwksVerifier(t, e).Verify(context.Background(), before.AccessToken)
			me := e.do(req{method: "GET", path: "/auth/me", token: before.AccessToken})
			if tc.published {
				if err != nil {
					t.Fatalf("another service refuses a token of the published key: %v", err)
				}
				decode(t, me, http.StatusOK, nil)
				return
			}
			if err == nil {
				t.Fatal("another service accepts a token of the withdrawn key")
			}
			wantBody(t, me, http.StatusUnauthorized, map[string]any{"type": "/docs/problems#unauthenticated",
				"title": "Unauthorized", "status": 401.0, "detail": "invalid access token", "code": "unauthenticated"})
		})
	}
}
