// Package authtest mints real EdDSA access tokens for tests of services
// that verify them, without running the identity service.
package authtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/httpx"
)

// Issuer signs tokens with a throwaway key.
type Issuer struct {
	Kid  string
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

// New creates an issuer with a fresh key.
func New(t testing.TB) *Issuer {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &Issuer{Kid: "test-key", priv: priv, pub: pub}
}

// Keys returns a KeySource holding the issuer's public key.
func (i *Issuer) Keys() auth.KeySource { return auth.StaticKeys{i.Kid: i.pub} }

// Verifier returns a verifier trusting this issuer.
func (i *Issuer) Verifier(t testing.TB) *auth.Verifier {
	t.Helper()
	v, err := auth.NewVerifier(i.Keys(), auth.Issuer, auth.Audience)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// JWKSServer serves the issuer's key set, for code that fetches JWKS.
func (i *Issuer) JWKSServer(t testing.TB) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpx.JSON(w, http.StatusOK, auth.JWKSet{Keys: []auth.JWK{auth.PublicJWK(i.Kid, i.pub)}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Token signs a valid 15-minute token for user id with role and team.
func (i *Issuer) Token(t testing.TB, userID int64, role string, teamID *int64) string {
	t.Helper()
	now := time.Now()
	return i.Sign(t, auth.Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: auth.Issuer, Audience: jwt.ClaimStrings{auth.Audience},
			Subject:  strconv.FormatInt(userID, 10),
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(15 * time.Minute)),
		},
		Role: role, TeamID: teamID,
	})
}

// Admin is Token for an admin user.
func (i *Issuer) Admin(t testing.TB, userID int64) string {
	return i.Token(t, userID, auth.RoleAdmin, nil)
}

// User is Token for a regular user.
func (i *Issuer) User(t testing.TB, userID int64) string {
	return i.Token(t, userID, auth.RoleUser, nil)
}

// Sign signs arbitrary claims, for tests of bad tokens.
func (i *Issuer) Sign(t testing.TB, c auth.Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	tok.Header["kid"] = i.Kid
	s, err := tok.SignedString(i.priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
