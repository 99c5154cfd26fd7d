package auth_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/authtest"
	"github.com/opencrm/crm/pkg/problem"
)

func claims(mod func(*auth.Claims)) auth.Claims {
	now := time.Now()
	c := auth.Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: auth.Issuer, Audience: jwt.ClaimStrings{auth.Audience}, Subject: "7",
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute)),
		},
		Role: auth.RoleUser,
	}
	if mod != nil {
		mod(&c)
	}
	return c
}

func TestVerifyRejectsBadTokens(t *testing.T) {
	t.Parallel()
	iss := authtest.New(t)
	other := authtest.New(t)
	other.Kid = "other-key"
	v := iss.Verifier(t)

	noneToken := func() string {
		h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT","kid":"test-key"}`))
		p := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"7","role":"admin","iss":"crm-identity","aud":"crm-api","exp":9999999999}`))
		return h + "." + p + "."
	}
	hsToken := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims(nil))
		tok.Header["kid"] = iss.Kid
		s, _ := tok.SignedString([]byte("guess"))
		return s
	}
	tests := map[string]string{
		"empty":          "",
		"malformed":      "not.a.jwt",
		"garbage":        "abc",
		"dots 1MB":       strings.Repeat(".", 1<<20),
		"alg none":       noneToken(),
		"alg HS256":      hsToken(),
		"expired":        iss.Sign(t, claims(func(c *auth.Claims) { c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Hour)) })),
		"no exp":         iss.Sign(t, claims(func(c *auth.Claims) { c.ExpiresAt = nil })),
		"wrong audience": iss.Sign(t, claims(func(c *auth.Claims) { c.Audience = jwt.ClaimStrings{"other"} })),
		"wrong issuer":   iss.Sign(t, claims(func(c *auth.Claims) { c.Issuer = "evil" })),
		"unknown kid":    other.Sign(t, claims(nil)),
		"bad role":       iss.Sign(t, claims(func(c *auth.Claims) { c.Role = "root" })),
		"bad subject":    iss.Sign(t, claims(func(c *auth.Claims) { c.Subject = "x" })),
	}
	for name, tok := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := v.Verify(context.Background(), tok)
			if p := problem.From(err); p.Status != 401 || p.Code != "unauthenticated" {
				t.Fatalf("got %v, want 401 unauthenticated", err)
			}
		})
	}
}

func TestVerifyAcceptsWithinLeeway(t *testing.T) {
	t.Parallel()
	iss := authtest.New(t)
	tok := iss.Sign(t, claims(func(c *auth.Claims) { c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-10 * time.Second)) }))
	c, err := iss.Verifier(t).Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if c.UserID() != 7 {
		t.Errorf("UserID = %d", c.UserID())
	}
}

func TestMiddleware(t *testing.T) {
	t.Parallel()
	iss := authtest.New(t)
	v := iss.Verifier(t)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	admin := v.Require(auth.RequireAdmin(ok))
	internal := auth.RequireInternal("0123456789abcdef0123")(ok)
	tests := []struct {
		name   string
		h      http.Handler
		header map[string]string
		want   int
	}{
		{"no token", admin, nil, 401},
		{"basic scheme", admin, map[string]string{"Authorization": "Basic abc"}, 401},
		{"user on admin route", admin, map[string]string{"Authorization": "Bearer " + iss.User(t, 2)}, 403},
		{"admin", admin, map[string]string{"Authorization": "bearer " + iss.Admin(t, 1)}, 204},
		{"internal without secret", internal, nil, 401},
		{"internal wrong secret", internal, map[string]string{auth.InternalHeader: "nope"}, 401},
		{"internal", internal, map[string]string{auth.InternalHeader: "0123456789abcdef0123"}, 204},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		for k, v := range tt.header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		tt.h.ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, w.Code, tt.want)
		}
		if w.Code == 401 && w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", tt.name)
		}
	}
}

func TestJWKSRefreshesOnNewKid(t *testing.T) {
	t.Parallel()
	iss := authtest.New(t)
	srv := iss.JWKSServer(t)
	keys := auth.NewJWKS(srv.URL)
	v, err := auth.NewVerifier(keys, auth.Issuer, auth.Audience)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), iss.User(t, 3)); err != nil {
		t.Fatalf("verify through JWKS: %v", err)
	}
	// A forged kid is refused without hammering the JWKS endpoint.
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	_ = pub
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims(nil))
	tok.Header["kid"] = "forged"
	s, _ := tok.SignedString(priv)
	if _, err := v.Verify(context.Background(), s); problem.From(err).Status != 401 {
		t.Fatalf("forged kid: %v", err)
	}
}

// TestJWKSFollowsThePublishedSet: once the cached set is MaxAge old it is
// fetched again, so a key identity withdrew stops verifying; while identity
// is unreachable the cached keys keep verifying. The refresh runs in the
// background: the withdrawn key still verifies during it.
func TestJWKSFollowsThePublishedSet(t *testing.T) {
	t.Parallel()
	old, current := authtest.New(t), authtest.New(t)
	old.Kid, current.Kid = "old", "current"
	var published atomic.Pointer[authtest.Issuer]
	published.Store(old)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var set auth.JWKSet
		for kid, pub := range published.Load().Keys().(auth.StaticKeys) {
			set.Keys = append(set.Keys, auth.PublicJWK(kid, pub))
		}
		_ = json.NewEncoder(w).Encode(set)
	}))
	defer srv.Close()
	keys := auth.NewJWKS(srv.URL)
	keys.MinRefresh, keys.MaxAge = 0, 0 // every call asks identity
	v, err := auth.NewVerifier(keys, auth.Issuer, auth.Audience)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := v.Verify(ctx, old.User(t, 3)); err != nil {
		t.Fatalf("old key while published: %v", err)
	}
	published.Store(current)
	if _, err := v.Verify(ctx, old.User(t, 3)); err != nil {
		t.Fatalf("old key while the refresh runs: %v", err)
	}
	// An unknown kid waits for the refresh in flight (or fetches), so once
	// it is answered the set identity publishes now is the cached one.
	if _, err := v.Verify(ctx, forged(t)); problem.From(err).Status != 401 {
		t.Fatalf("forged kid: got %v, want 401", err)
	}
	if _, err := v.Verify(ctx, old.User(t, 3)); problem.From(err).Status != 401 {
		t.Fatalf("old key after identity withdrew it: got %v, want 401", err)
	}
	if _, err := v.Verify(ctx, current.User(t, 3)); err != nil {
		t.Fatalf("current key: %v", err)
	}
	srv.Close()
	if _, err := v.Verify(ctx, current.User(t, 3)); err != nil {
		t.Fatalf("cached key with identity unreachable: %v", err)
	}
}

// TestJWKSUnreachableIs503: with no key set yet and identity unreachable a
// token cannot be checked: 503, not 401, also for the calls within
// MinRefresh that do not ask identity again.
func TestJWKSUnreachableIs503(t *testing.T) {
	t.Parallel()
	iss := authtest.New(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	keys := auth.NewJWKS(srv.URL)
	v, _ := auth.NewVerifier(keys, auth.Issuer, auth.Audience)
	for i := range 3 {
		_, err := v.Verify(context.Background(), iss.User(t, 3))
		if p := problem.From(err); p.Status != 503 || p.Code != "upstream_unavailable" {
			t.Fatalf("call %d: got %v, want 503", i+1, err)
		}
	}
	if err := keys.Ready(context.Background()); err == nil {
		t.Error("Ready = nil without keys")
	}
}

// forged is a well-formed token signed by a key nobody published.
func forged(t *testing.T) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims(nil))
	tok.Header["kid"] = "forged"
	s, err := tok.SignedString(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// gatedJWKS publishes iss's key. The first `open` requests are answered at
// once; later ones report their arrival on arrived and wait until the test
// calls release.
type gatedJWKS struct {
	srv      *httptest.Server
	requests atomic.Int32
	arrived  chan struct{}
	gate     chan struct{}
	once     sync.Once
}

func newGatedJWKS(t *testing.T, iss *authtest.Issuer, open int32) *gatedJWKS {
	t.Helper()
	g := &gatedJWKS{arrived: make(chan struct{}, 16), gate: make(chan struct{})}
	set := auth.JWKSet{Keys: []auth.JWK{auth.PublicJWK(iss.Kid, iss.Keys().(auth.StaticKeys)[iss.Kid])}}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.requests.Add(1) > open {
			g.arrived <- struct{}{}
			<-g.gate
		}
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(g.srv.Close)
	t.Cleanup(g.release) // before Close: Close waits for the handlers
	return g
}

func (g *gatedJWKS) release() { g.once.Do(func() { close(g.gate) }) }

// within runs f and fails the test if it has not returned after a generous
// bound: f must not wait for a blocked fetch (only a broken implementation
// ever reaches the bound).
func within[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s waited for the blocked JWKS fetch", what)
		panic("unreachable")
	}
}

// TestJWKSCachedKeyVerifiesWhileAFetchIsBlocked: identity being slow never
// delays a token whose key is cached. The fetch that is in flight (for a
// forged kid, or the refresh of a set MaxAge old) is blocked by the test
// server until the test releases it; meanwhile the cached key verifies,
// fresh or stale, and a forged kid waits for that same fetch (no second
// request reaches identity).
func TestJWKSCachedKeyVerifiesWhileAFetchIsBlocked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		maxAge time.Duration
		// stale: the blocked fetch is the refresh a stale set starts;
		// otherwise it is the fetch a forged kid starts.
		stale bool
	}{
		{"fresh key, forged kid's fetch in flight", time.Hour, false},
		{"stale key, forged kid's fetch in flight", 0, false},
		{"stale key, its own background refresh in flight", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			iss := authtest.New(t)
			g := newGatedJWKS(t, iss, 1)
			keys := auth.NewJWKS(g.srv.URL)
			keys.MinRefresh, keys.MaxAge = 0, tc.maxAge
			keys.Client = &http.Client{} // no timeout: blocked until released
			v, err := auth.NewVerifier(keys, auth.Issuer, auth.Audience)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			verify := func(tok string) func() error {
				return func() error { _, err := v.Verify(ctx, tok); return err }
			}
			if err := verify(iss.User(t, 3))(); err != nil {
				t.Fatalf("first verification: %v", err)
			}

			forgedDone := make(chan error, 1)
			if tc.stale {
				if err := within(t, "the verification starting the refresh", verify(iss.User(t, 3))); err != nil {
					t.Fatalf("stale key starting the refresh: %v", err)
				}
			} else {
				go func() { forgedDone <- verify(forged(t))() }()
			}
			<-g.arrived // the second fetch is now blocked in identity

			for i := range 3 {
				if err := within(t, "a cached key", verify(iss.User(t, 3))); err != nil {
					t.Fatalf("cached key, verification %d during the fetch: %v", i+1, err)
				}
			}
			if !tc.stale {
				select {
				case err := <-forgedDone:
					t.Fatalf("forged kid answered (%v) before the fetch it waits for", err)
				default:
				}
			}
			g.release()
			if !tc.stale {
				if err := <-forgedDone; problem.From(err).Status != 401 {
					t.Errorf("forged kid: got %v, want 401", err)
				}
			}
			if got := g.requests.Load(); got != 2 {
				t.Errorf("identity received %d JWKS requests, want 2", got)
			}
		})
	}
}

// TestJWKSWaitersShareOneFetch: with no keys yet, every verification waits
// for the one fetch in flight (none starts another, and a forged kid later
// within MinRefresh asks nothing); a caller whose context ends stops
// waiting at once with 503.
func TestJWKSWaitersShareOneFetch(t *testing.T) {
	t.Parallel()
	iss := authtest.New(t)
	g := newGatedJWKS(t, iss, 0)
	keys := auth.NewJWKS(g.srv.URL)
	keys.MinRefresh = time.Hour
	keys.Client = &http.Client{} // no timeout: blocked until released
	v, err := auth.NewVerifier(keys, auth.Issuer, auth.Audience)
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan error, 3)
	for range cap(results) {
		go func() { _, err := v.Verify(context.Background(), iss.User(t, 3)); results <- err }()
	}
	<-g.arrived

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	err = within(t, "a verification whose context ended", func() error { _, err := v.Verify(cancelled, iss.User(t, 3)); return err })
	if p := problem.From(err); p.Status != 503 {
		t.Errorf("cancelled waiter: got %v, want 503", err)
	}
	if err := within(t, "Ready with its context ended", func() error { return keys.Ready(cancelled) }); err == nil {
		t.Error("Ready = nil before any key was fetched")
	}

	g.release()
	for range cap(results) {
		if err := <-results; err != nil {
			t.Errorf("waiter: %v", err)
		}
	}
	if _, err := v.Verify(context.Background(), forged(t)); problem.From(err).Status != 401 {
		t.Errorf("forged kid: got %v, want 401", err)
	}
	if err := keys.Ready(context.Background()); err != nil {
		t.Errorf("Ready after the fetch: %v", err)
	}
	if got := g.requests.Load(); got != 1 {
		t.Errorf("identity received %d JWKS requests, want 1", got)
	}
}
