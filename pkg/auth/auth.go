// Package auth verifies the platform's access tokens (EdDSA JWTs issued by
// the identity service) in every service, so no service trusts an identity
// header a client could set, and guards internal routes with a shared secret.
package auth

import (
	"context"
	"crypto/ed25519"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/opencrm/crm/pkg/problem"
)

// Defaults shared by the issuer and every verifier.
const (
	Issuer   = "crm-identity"
	Audience = "crm-api"
	// Leeway tolerates clock skew between hosts.
	Leeway = 30 * time.Second
	// MaxTokenBytes rejects absurd tokens before any parsing work.
	MaxTokenBytes = 4096
	RoleAdmin     = "admin"
	RoleUser      = "user"
)

// Claims are the access token's claims.
type Claims struct {
	jwt.RegisteredClaims
	Role   string `json:"role"`
	TeamID *int64 `json:"team_id,omitempty"`
	Name   string `json:"name,omitempty"`
	// Scopes is set only on the short-lived tokens identity mints for an
	// integration token's service user: what that token may do.
	Scopes []string `json:"scopes,omitempty"`
}

// UserID is the subject as an integer user id.
func (c *Claims) UserID() int64 {
	n, _ := strconv.ParseInt(c.Subject, 10, 64)
	return n
}

// IsAdmin reports the admin role.
func (c *Claims) IsAdmin() bool { return c.Role == RoleAdmin }

// KeySource finds a public key by kid (JWKS, static keys in tests).
type KeySource interface {
	Key(ctx context.Context, kid string) (ed25519.PublicKey, error)
}

// ErrUnknownKey is returned by a KeySource for a kid it does not know.
var ErrUnknownKey = errors.New("unknown signing key")

// Verifier checks access tokens.
type Verifier struct {
	keys KeySource
	// parser is built once: its options never change and it holds no
	// per-call state, so every request shares it.
	parser *jwt.Parser
	// revocations, when set, refuses or lowers the claims of users whose
	// access was reduced after their token was issued.
	revocations *Revocations
}

// Option configures a Verifier.
type Option func(*Verifier)

// WithRevocations makes the verifier apply identity's recent access
// changes (deactivation, deletion, demotion) to every token it accepts.
func WithRevocations(r *Revocations) Option {
	return func(v *Verifier) { v.revocations = r }
}

// NewVerifier verifies tokens from issuer for audience with keys.
func NewVerifier(keys KeySource, issuer, audience string, opts ...Option) (*Verifier, error) {
	if keys == nil || issuer == "" || audience == "" {
		return nil, errors.New("auth: verifier needs keys, issuer and audience")
	}
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithIssuer(issuer),
		jwt.WithAudience(audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(Leeway),
		jwt.WithTimeFunc(time.Now),
	)
	v := &Verifier{keys: keys, parser: parser}
	for _, o := range opts {
		o(v)
	}
	return v, nil
}

// Verify parses and validates a compact JWT: EdDSA only, kid, iss, aud,
// exp required, 30 s leeway; then the access changes published since it was
// issued (WithRevocations). Every failure is the same 401 to the client.
func (v *Verifier) Verify(ctx context.Context, token string) (*Claims, error) {
	if token == "" || len(token) > MaxTokenBytes || strings.Count(token, ".") != 2 {
		return nil, problem.Unauthenticated("invalid access token")
	}
	claims := &Claims{}
	_, err := v.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, errors.New("missing kid")
		}
		return v.keys.Key(ctx, kid)
	})
	if err != nil {
		if errors.Is(err, jwt.ErrTokenExpired) {
			return nil, problem.Unauthenticated("access token expired")
		}
		var p *problem.Error
		if errors.As(err, &p) && p.Status >= 500 {
			return nil, p
		}
		return nil, problem.Unauthenticated("invalid access token")
	}
	if claims.UserID() <= 0 || (claims.Role != RoleAdmin && claims.Role != RoleUser) {
		return nil, problem.Unauthenticated("invalid access token")
	}
	if v.revocations != nil {
		if err := v.revocations.Apply(ctx, claims); err != nil {
			return nil, err
		}
	}
	return claims, nil
}

type claimsKey struct{}

// WithClaims stores verified claims in ctx.
func WithClaims(ctx context.Context, c *Claims) context.Context {
	return context.WithValue(ctx, claimsKey{}, c)
}

// FromContext returns the caller's claims; nil on unauthenticated routes.
func FromContext(ctx context.Context) *Claims {
	c, _ := ctx.Value(claimsKey{}).(*Claims)
	return c
}

// BearerToken extracts the token of an "Authorization: Bearer" header.
func BearerToken(h string) (string, bool) {
	const prefix = "bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	t := strings.TrimSpace(h[len(prefix):])
	return t, t != ""
}

// Require verifies the bearer token and stores the claims; 401 otherwise.
func (v *Verifier) Require(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := BearerToken(r.Header.Get("Authorization"))
		if !ok {
			problem.Write(w, r, problem.Unauthenticated("missing bearer token"))
			return
		}
		c, err := v.Verify(r.Context(), tok)
		if err != nil {
			problem.Write(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithClaims(r.Context(), c)))
	})
}

// RequireAdmin answers 403 unless Require stored admin claims.
func RequireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := FromContext(r.Context())
		if c == nil {
			problem.Write(w, r, problem.Unauthenticated("missing bearer token"))
			return
		}
		if !c.IsAdmin() {
			problem.Write(w, r, problem.Forbidden("this action requires the admin role"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// AdminFunc is RequireAdmin for a HandlerFunc.
func AdminFunc(h http.HandlerFunc) http.Handler { return RequireAdmin(h) }

// InternalHeader carries the shared secret on service-to-service calls.
const InternalHeader = "X-Internal-Token"

// RequireInternal guards /internal routes: the caller must present the
// cluster's shared secret. The gateway never routes /internal, and the
// secret never leaves the service network.
func RequireInternal(secret string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got := r.Header.Get(InternalHeader)
			if secret == "" || subtle.ConstantTimeCompare([]byte(got), []byte(secret)) != 1 {
				problem.Write(w, r, problem.Unauthenticated("internal route"))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// CheckInternalSecret validates CRM_INTERNAL_SECRET at start-up.
func CheckInternalSecret(s string) error {
	if len(s) < 16 {
		return fmt.Errorf("must be at least 16 characters")
	}
	return nil
}
