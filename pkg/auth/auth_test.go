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
// is unreachable the cached keys keep verifying.
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

func TestJWKSUnreachableIs503(t *testing.T) {
	t.Parallel()
	iss := authtest.New(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	v, _ := auth.NewVerifier(auth.NewJWKS(srv.URL), auth.Issuer, auth.Audience)
	_, err := v.Verify(context.Background(), iss.User(t, 3))
	if p := problem.From(err); p.Status != 503 {
		t.Fatalf("got %v, want 503", err)
	}
}
