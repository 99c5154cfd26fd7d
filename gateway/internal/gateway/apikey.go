package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/svcclient"
)

// keyCheckTimeout bounds one question to identity: a public request must
// not wait on it for the internal client's full 10 s.
const keyCheckTimeout = 5 * time.Second

// newKeyVerifier is identity's one cached API-key verifier (shared with
// intake), asking identity at identityURL with the internal secret.
func newKeyVerifier(identityURL, secret string, ttl time.Duration) (*identityapi.KeyVerifier, error) {
	sc := svcclient.New("identity", identityURL, secret)
	sc.Timeout = keyCheckTimeout
	c, err := identityapi.NewClient(sc)
	if err != nil {
		return nil, err
	}
	return identityapi.NewKeyVerifier(c, ttl)
}

// verifyKey checks X-API-Key and renders the gateway's own answers: a 401
// naming the header for a missing, unknown or revoked key, and a 503 when
// identity cannot answer (the public API's clients retry on it).
func (g *Gateway) verifyKey(ctx context.Context, key string) error {
	if key == "" {
		return keyProblem("missing API key: send it in the X-API-Key header")
	}
	_, err := g.keys.Verify(ctx, key)
	switch {
	case errors.Is(err, identityapi.ErrUnknownKey) && len(key) > identityapi.MaxKeyLength:
		return keyProblem("invalid API key")
	case errors.Is(err, identityapi.ErrUnknownKey):
		return keyProblem("invalid or revoked API key")
	case err != nil:
		return fmt.Errorf("%w: %v", problem.Unavailable("API key verification is unavailable", 5), err)
	}
	return nil
}

// keyProblem is the 401 of the key-authenticated routes; its challenge
// names the header to use rather than a bearer scheme.
func keyProblem(detail string) *problem.Error {
	p := problem.Unauthenticated(detail)
	p.Header = http.Header{"Www-Authenticate": {identityapi.KeyChallenge}}
	return p
}
