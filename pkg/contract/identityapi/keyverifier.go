package identityapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// MaxKeyCacheTTL is the longest a verdict may be reused: a revoked key is
// refused everywhere within 5 s (docs/decisions.md).
const MaxKeyCacheTTL = 5 * time.Second

// KeyChallenge is the WWW-Authenticate of a 401 for a missing, unknown or
// revoked API key, from the gateway or from a service behind it: one
// challenge, naming the header to send rather than a bearer scheme.
const KeyChallenge = `APIKey realm="crm-public", header="X-API-Key"`

// MaxKeyLength refuses absurd header values before asking identity.
const MaxKeyLength = 256

// KeyVerifier is the one API-key check of the platform: it asks identity
// and caches each verdict, positive or negative, for at most its TTL, so a
// burst of submissions costs identity one call per key, guessing keys does
// not turn into load on identity, and a revoked key stops working within
// the TTL. Concurrent misses of one key share one question to identity (a
// busy key whose entry just expired would otherwise send a burst that
// could time out). Failures of identity are not cached.
type KeyVerifier struct {
	client *Client
	cache  *verdictCache[VerifiedKey]
}

// NewKeyVerifier verifies through client, caching for ttl (0 to
// MaxKeyCacheTTL).
func NewKeyVerifier(client *Client, ttl time.Duration) (*KeyVerifier, error) {
	if client == nil {
		return nil, errors.New("identityapi: the key verifier needs an identity client")
	}
	if ttl < 0 || ttl > MaxKeyCacheTTL {
		return nil, fmt.Errorf("identityapi: key cache ttl must be between 0 and %s", MaxKeyCacheTTL)
	}
	return &KeyVerifier{client: client, cache: newVerdictCache[VerifiedKey](ttl, ErrUnknownKey)}, nil
}

// SetClock replaces the clock the cache expires by (tests move time).
func (v *KeyVerifier) SetClock(now func() time.Time) { v.cache.now = now }

// Verify returns the key's record; ErrUnknownKey for an empty, malformed,
// unknown or revoked key; or the problem error (503, 504, 502) of an
// identity that cannot answer.
func (v *KeyVerifier) Verify(ctx context.Context, secret string) (VerifiedKey, error) {
	if secret == "" || len(secret) > MaxKeyLength || strings.ContainsAny(secret, " \t\r\n") {
		return VerifiedKey{}, ErrUnknownKey
	}
	return v.cache.verify(ctx, secret, func(ctx context.Context) (VerifiedKey, error) {
		return v.client.VerifyKey(ctx, secret)
	}, nil)
}
