// Package apikey verifies intake's API keys with identity's one cached
// verifier (identityapi.KeyVerifier, shared with the gateway): a key
// identity refuses is ErrUnknown, which the edge answers with the API-key
// challenge.
package apikey

import (
	"context"
	"errors"
	"time"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/intake/internal/intake"
)

// MaxTTL is the longest a verify answer may be reused: a revoked key is
// refused everywhere within 5 s.
const MaxTTL = identityapi.MaxKeyCacheTTL

// ErrUnknown is an unknown or revoked key.
var ErrUnknown = fault.Unauthenticated("missing, unknown or revoked API key")

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

// Verify implements intake.Keys: ErrUnknown for a key identity refuses,
// the error of an identity that cannot answer otherwise.
func (v *Verifier) Verify(ctx context.Context, secret string) (intake.Key, error) {
	k, err := v.keys.Verify(ctx, secret)
	switch {
	case errors.Is(err, identityapi.ErrUnknownKey):
		return intake.Key{}, ErrUnknown
	case err != nil:
		return intake.Key{}, err
	}
	return intake.Key(k), nil
}
