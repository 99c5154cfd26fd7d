package identity

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/validate"
)

// AccessTokenPrefix marks an integration token, so leaked tokens are
// recognisable by secret scanners and the gateway can tell them from JWTs.
const AccessTokenPrefix = "crm_pat_"

// AccessTokenDisplayLength is how much of a token is stored in clear.
const AccessTokenDisplayLength = 16

// MintedTTL is the lifetime of the access token minted for an integration
// token's service user on each verification. The gateway caches it for a
// few seconds only, so it never reaches a client and always has most of
// its life left when forwarded.
const MintedTTL = 60 * time.Second

// LastUsedEvery is how often last_used_at is written per token at most.
const LastUsedEvery = time.Minute

// MaxTokenScopes bounds the scopes list of a token.
const MaxTokenScopes = 32

// ErrInvalidAccessToken is the one answer to an unknown, revoked or
// expired integration token.
var ErrInvalidAccessToken = fault.Unauthenticated("invalid, revoked or expired access token")

// ErrAccessTokenNotFound is a token id that does not exist.
var ErrAccessTokenNotFound = fault.NotFound("access token")

// AccessToken is an integration token, as the API answers it. It acts as
// its own service user (UserID), a users row that can never log in. The
// secret (Token) is set by the edge, on creation only.
type AccessToken = identityapi.AccessToken

// NewAccessToken is a token to insert together with its service user.
type NewAccessToken struct {
	Name      string
	Prefix    string
	Hash      []byte
	Scopes    []string
	Role      string
	CreatedBy *int64
	ExpiresAt *time.Time
	// ServiceEmail is the service user's unique, undeliverable address.
	ServiceEmail string
}

// AccessTokens stores integration tokens and their service users.
type AccessTokens interface {
	// CreateAccessToken inserts the service user (kind service, active, no
	// usable password; its user.created event included) and the token.
	CreateAccessToken(ctx context.Context, t NewAccessToken) (AccessToken, error)
	ListAccessTokens(ctx context.Context) ([]AccessToken, error)
	// RevokeAccessToken marks the token revoked and deactivates its service
	// user (user.updated event), so caches keyed on the user drop it too.
	RevokeAccessToken(ctx context.Context, id int64) error
	// AccessTokenByHash finds an unrevoked token and its stored hash.
	AccessTokenByHash(ctx context.Context, hash []byte) (AccessToken, []byte, error)
	// TouchAccessToken sets last_used_at to now unless it was set less
	// than every ago.
	TouchAccessToken(ctx context.Context, id int64, every time.Duration) error
}

// MaxExpiry is the latest expires_at: the last second the API's timestamp
// format (a four-digit year, in UTC) can write. A later one, such as
// 9999-12-31T23:59:59-01:00, would be answered and listed as a year-10000
// timestamp that no RFC 3339 client can read.
var MaxExpiry = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// AccessTokenInput asks for a new integration token: the body of
// CreateAccessToken, decoded into the contract's type.
type AccessTokenInput = identityapi.AccessTokenInput

func checkAccessTokenInput(in *AccessTokenInput, now time.Time) error {
	in.Name = strings.TrimSpace(in.Name)
	if in.Role == "" {
		in.Role = auth.RoleUser
	}
	var v validate.Errors
	checkName(&v, in.Name)
	v.OneOf("role", in.Role, auth.RoleAdmin, auth.RoleUser)
	switch {
	case len(in.Scopes) == 0:
		v.Add("scopes", "must name at least one of %s", strings.Join(auth.AllScopes(), ", "))
	case len(in.Scopes) > MaxTokenScopes:
		v.Add("scopes", "must hold at most %d scopes", MaxTokenScopes)
	default:
		for _, s := range in.Scopes {
			if !auth.ValidScope(s) {
				v.Add("scopes", "%q is not a scope; use %s", validate.Text(s), strings.Join(auth.AllScopes(), ", "))
				break
			}
		}
		if slices.Contains(in.Scopes, auth.ScopeAdmin) && in.Role != auth.RoleAdmin {
			v.Add("scopes", "the admin scope needs role admin")
		}
	}
	switch {
	case in.ExpiresAt == nil:
	case !in.ExpiresAt.After(now):
		v.Add("expires_at", "must be in the future")
	case in.ExpiresAt.After(MaxExpiry):
		v.Add("expires_at", "must be at most %s", MaxExpiry.Format(time.RFC3339))
	}
	return v.Err()
}

// CreateAccessToken stores a new token and its service user and returns it
// with its secret, which is never retrievable again. creator is the
// caller: an integration token may mint tokens only when it holds the admin
// scope.
func (s *Service) CreateAccessToken(ctx context.Context, in AccessTokenInput, creator *auth.Claims) (AccessToken, string, error) {
	if creator == nil || !creator.IsAdmin() {
		return AccessToken{}, "", ErrNotAdmin
	}
	if !creator.Allows(auth.ScopeAdmin) {
		return AccessToken{}, "", fault.Forbidden("only a token holding the admin scope may create tokens")
	}
	if err := checkAccessTokenInput(&in, s.now()); err != nil {
		return AccessToken{}, "", err
	}
	scopes := slices.Clone(in.Scopes)
	slices.Sort(scopes)
	scopes = slices.Compact(scopes)
	r, err := randomSecret(32)
	if err != nil {
		return AccessToken{}, "", err
	}
	secret := AccessTokenPrefix + r
	var by *int64
	if id := creator.UserID(); id > 0 {
		by = &id
	}
	var exp *time.Time
	if in.ExpiresAt != nil {
		e := in.ExpiresAt.UTC()
		exp = &e
	}
	t, err := s.store.CreateAccessToken(ctx, NewAccessToken{
		Name: in.Name, Prefix: secret[:AccessTokenDisplayLength], Hash: HashSecret(secret),
		Scopes: scopes, Role: in.Role, CreatedBy: by, ExpiresAt: exp,
		ServiceEmail: "token-" + uuid.NewString() + "@access-tokens.invalid",
	})
	return t, secret, err
}

// AccessTokens lists tokens without secrets, newest first.
func (s *Service) AccessTokens(ctx context.Context) ([]AccessToken, error) {
	return s.store.ListAccessTokens(ctx)
}

// RevokeAccessToken revokes a token; the gateway stops accepting it within
// its cache lifetime.
func (s *Service) RevokeAccessToken(ctx context.Context, id int64) error {
	return s.store.RevokeAccessToken(ctx, id)
}

// VerifiedAccessToken is a valid token with an access token minted for its
// service user.
type VerifiedAccessToken struct {
	Token       AccessToken
	AccessToken string
	ExpiresIn   int
}

// VerifyAccessToken checks secret and mints a short-lived access token for
// the token's service user carrying its scopes, which the gateway forwards
// so every service verifies it as any other access token.
func (s *Service) VerifyAccessToken(ctx context.Context, secret string) (VerifiedAccessToken, error) {
	if !strings.HasPrefix(secret, AccessTokenPrefix) || len(secret) > maxSecretLength {
		return VerifiedAccessToken{}, ErrInvalidAccessToken
	}
	want := HashSecret(secret)
	t, stored, err := s.store.AccessTokenByHash(ctx, want)
	if errors.Is(err, ErrAccessTokenNotFound) {
		return VerifiedAccessToken{}, ErrInvalidAccessToken
	}
	if err != nil {
		return VerifiedAccessToken{}, err
	}
	now := s.now()
	if subtle.ConstantTimeCompare(stored, want) != 1 || (t.ExpiresAt != nil && !now.Before(t.ExpiresAt.Time)) {
		return VerifiedAccessToken{}, ErrInvalidAccessToken
	}
	ttl := MintedTTL
	if t.ExpiresAt != nil && t.ExpiresAt.Sub(now) < ttl {
		ttl = t.ExpiresAt.Sub(now)
	}
	claims := auth.Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: auth.Issuer, Audience: jwt.ClaimStrings{auth.Audience},
			Subject:  strconv.FormatInt(t.UserID, 10),
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Role: t.Role, Name: t.Name, Scopes: t.Scopes,
	}
	tok, err := s.keys.Sign(ctx, claims)
	if err != nil {
		return VerifiedAccessToken{}, fmt.Errorf("sign access token: %w", err)
	}
	if err := s.store.TouchAccessToken(ctx, t.ID, LastUsedEvery); err != nil {
		// Bookkeeping only: the call itself is valid.
		s.log.WarnContext(ctx, "cannot record access token use", "error", err.Error())
	}
	return VerifiedAccessToken{Token: t, AccessToken: tok, ExpiresIn: int(ttl / time.Second)}, nil
}
