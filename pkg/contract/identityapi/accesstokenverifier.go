package identityapi

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// mintedMargin is how long before its expiry a minted access token stops
// being reused, so one is never forwarded in its last seconds.
const mintedMargin = 2 * time.Second

// AccessTokenVerifier is the gateway's integration-token check: it asks
// identity and caches each verdict, positive or negative, for at most its
// TTL (MaxKeyCacheTTL), so a revoked or expired token stops working within
// the TTL, a busy token costs identity one call per TTL, and guessing
// tokens does not turn into load on identity. A positive verdict is never
// kept past the minted access token's own expiry (less a margin).
// Concurrent misses of one token share one question to identity. Failures
// are not cached.
type AccessTokenVerifier struct {
	client *Client
	cache  *verdictCache[VerifiedAccessToken]
}

// NewAccessTokenVerifier verifies through client, caching for ttl (0 to
// MaxKeyCacheTTL).
func NewAccessTokenVerifier(client *Client, ttl time.Duration) (*AccessTokenVerifier, error) {
	if client == nil {
		return nil, errors.New("identityapi: the access token verifier needs an identity client")
	}
	if ttl < 0 || ttl > MaxKeyCacheTTL {
		return nil, fmt.Errorf("identityapi: access token cache ttl must be between 0 and %s", MaxKeyCacheTTL)
	}
	return &AccessTokenVerifier{client: client, cache: newVerdictCache[VerifiedAccessToken](ttl, ErrUnknownAccessToken)}, nil
}

// SetClock replaces the clock the cache expires by (tests move time).
func (v *AccessTokenVerifier) SetClock(now func() time.Time) { v.cache.now = now }

// Verify returns identity's answer for tok; ErrUnknownAccessToken for a
// token that is not plausible (never asked about) or that identity
// refuses; or the errors of Client.VerifyAccessToken when identity cannot
// answer usefully.
func (v *AccessTokenVerifier) Verify(ctx context.Context, tok string) (VerifiedAccessToken, error) {
	if !PlausibleAccessToken(tok) {
		return VerifiedAccessToken{}, ErrUnknownAccessToken
	}
	return v.cache.verify(ctx, tok, func(ctx context.Context) (VerifiedAccessToken, error) {
		return v.client.VerifyAccessToken(ctx, tok)
	}, func(t VerifiedAccessToken, at time.Time) time.Time {
		return at.Add(time.Duration(t.ExpiresIn)*time.Second - mintedMargin)
	})
}
