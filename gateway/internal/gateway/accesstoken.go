package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/svcclient"
)

// tokenVerifier is identity's cached integration-token verifier
// (identityapi.AccessTokenVerifier) with the gateway's own answers: a 401
// for a token that cannot be one or that identity refuses, a 502 for an
// answer outside identity's contract, and a 503 when identity cannot
// answer (integrations retry on it, and never discard a good token).
type tokenVerifier struct {
	tokens *identityapi.AccessTokenVerifier
}

// newTokenVerifier asks identity at identityURL with the internal secret,
// each question bounded like an API key's, and caches for ttl.
func newTokenVerifier(identityURL, secret string, ttl time.Duration) (*tokenVerifier, error) {
	sc := svcclient.New("identity", identityURL, secret)
	sc.Timeout = keyCheckTimeout
	c, err := identityapi.NewClient(sc)
	if err != nil {
		return nil, err
	}
	v, err := identityapi.NewAccessTokenVerifier(c, ttl)
	if err != nil {
		return nil, err
	}
	return &tokenVerifier{tokens: v}, nil
}

// Verify returns identity's answer for tok: its service user, role,
// scopes and the access token minted for that user.
func (v *tokenVerifier) Verify(ctx context.Context, tok string) (identityapi.VerifiedAccessToken, error) {
	if !identityapi.PlausibleAccessToken(tok) {
		return identityapi.VerifiedAccessToken{}, problem.Unauthenticated("invalid access token")
	}
	grant, err := v.tokens.Verify(ctx, tok)
	switch {
	case errors.Is(err, identityapi.ErrUnknownAccessToken):
		return grant, problem.Unauthenticated("invalid, revoked or expired access token")
	case errors.Is(err, identityapi.ErrBadAnswer):
		return grant, fmt.Errorf("%w: %v", problem.BadGateway("access token verification failed"), err)
	case err != nil:
		return grant, fmt.Errorf("%w: %v", problem.Unavailable("access token verification is unavailable", 5), err)
	}
	return grant, nil
}

// insufficientScope is the RFC 6750 answer to a token lacking the route's
// scope.
func insufficientScope(scope string) *problem.Error {
	return &problem.Error{
		Status: http.StatusForbidden, Code: "insufficient_scope", Title: http.StatusText(http.StatusForbidden),
		Detail: "this access token lacks the " + scope + " scope",
		Header: http.Header{"Www-Authenticate": {`Bearer error="insufficient_scope", scope="` + scope + `"`}},
	}
}

// isAccessToken reports a bearer value that is an integration token; any
// other is verified as a JWT.
func isAccessToken(tok string) bool { return strings.HasPrefix(tok, identityapi.AccessTokenPrefix) }
