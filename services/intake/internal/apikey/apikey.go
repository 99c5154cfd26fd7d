// Package apikey is intake's edge of API-key verification: identity's one
// cached verifier (identityapi.KeyVerifier, shared with the gateway) with
// intake's own 401 for a missing, unknown or revoked key.
package apikey

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/services/intake/internal/intake"
)

// MaxTTL is the longest a verify answer may be reused: a revoked key is
// refused everywhere within 5 s.
const MaxTTL = identityapi.MaxKeyCacheTTL

// ErrInvalid is the 401 for a missing, unknown or revoked key.
func ErrInvalid() *problem.Error {
	e := problem.Unauthenticated("missing, unknown or revoked API key")
	e.Header = http.Header{"Www-Authenticate": {identityapi.KeyChallenge}}
	return e
}

// Verifier implements intake.Keys.
type Verifier struct{ keys *identityapi.KeyVerifier }

// New verifies through identity's client, caching for ttl (at most MaxTTL).
func New(identity *identityapi.Client, ttl time.Duration) (*Verifier, error) {
	v, err := identityapi.NewKeyVerifier(identity, ttl)
	if err != nil {
		return nil, err
	}
	return &Verifier{keys: v}, nil
}

var _ intake.Keys = (*Verifier)(nil)

// Verify implements intake.Keys: ErrInvalid for a key identity refuses, the
// problem of an identity that cannot answer (503, 504, 502) otherwise.
func (v *Verifier) Verify(ctx context.Context, secret string) (intake.Key, error) {
	k, err := v.keys.Verify(ctx, secret)
	switch {
	case errors.Is(err, identityapi.ErrUnknownKey):
		return intake.Key{}, ErrInvalid()
	case err != nil:
		return intake.Key{}, err
	}
	return intake.Key(k), nil
}
