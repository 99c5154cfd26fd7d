package identityapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/svcclient"
)

// AccessTokenPrefix marks an integration token in a bearer header; any
// other bearer value is a JWT.
const AccessTokenPrefix = "crm_pat_"

// MaxAccessTokenLength refuses absurd tokens before asking identity (a
// real one is 51 bytes).
const MaxAccessTokenLength = 128

// VerifyAccessTokenRequest is the body of POST /internal/access-tokens/verify.
type VerifyAccessTokenRequest struct {
	Token string `json:"token"`
}

// VerifiedAccessToken is identity's answer for a valid integration token:
// its service user, role and scopes, and a short-lived access token minted
// for that user, which the gateway forwards in place of the secret so
// every service verifies the caller as it verifies any access token.
type VerifiedAccessToken struct {
	ID          int64    `json:"id"`
	UserID      int64    `json:"user_id"`
	Role        string   `json:"role"`
	Scopes      []string `json:"scopes"`
	AccessToken string   `json:"access_token"`
	// ExpiresIn is the minted access token's lifetime in seconds.
	ExpiresIn int `json:"expires_in"`
}

var (
	// ErrUnknownAccessToken is an integration token identity does not
	// know, or has revoked, or that expired (it answers 401).
	ErrUnknownAccessToken = errors.New("identityapi: invalid, revoked or expired access token")
	// ErrBadAnswer is an answer of identity that breaks this contract
	// (a verification without the minted token): identity's fault, not
	// the caller's, and not an outage either.
	ErrBadAnswer = errors.New("identityapi: answer outside the contract")
)

// PlausibleAccessToken reports whether tok can be an integration token at
// all (the prefix, then base64url, at most MaxAccessTokenLength bytes), so
// garbage is refused without a call to identity.
func PlausibleAccessToken(tok string) bool {
	if len(tok) > MaxAccessTokenLength || len(tok) <= len(AccessTokenPrefix) || tok[:len(AccessTokenPrefix)] != AccessTokenPrefix {
		return false
	}
	for _, r := range tok[len(AccessTokenPrefix):] {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// VerifyAccessToken asks identity about an integration token, uncached:
// ErrUnknownAccessToken for one it refuses; an error wrapping ErrBadAnswer
// (and a 502 problem) for an answer without the minted token; otherwise
// the problem error (503, 504, 502) of an identity that cannot answer.
// Edges use AccessTokenVerifier, which caches.
func (c *Client) VerifyAccessToken(ctx context.Context, token string) (VerifiedAccessToken, error) {
	var out internalAnswer[VerifiedAccessToken]
	err := c.c.Do(ctx, http.MethodPost, PathVerifyAccessToken, "", VerifyAccessTokenRequest{Token: token}, &out)
	var p *problem.Error
	var st *svcclient.StatusErr
	switch {
	case errors.As(err, &st) && st.Status == http.StatusUnauthorized,
		errors.As(err, &p) && (p.Status == http.StatusNotFound || p.Status == http.StatusUnprocessableEntity):
		return VerifiedAccessToken{}, ErrUnknownAccessToken
	case err != nil:
		return VerifiedAccessToken{}, err
	case out.Data.AccessToken == "" || out.Data.UserID <= 0:
		return VerifiedAccessToken{}, fmt.Errorf("identity: verify answer without an access token: %w: %w",
			ErrBadAnswer, problem.BadGateway("identity answered with an unreadable body"))
	}
	if out.Data.Scopes == nil {
		out.Data.Scopes = []string{}
	}
	return out.Data, nil
}
