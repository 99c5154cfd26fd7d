package identityapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// mintedMargin is how long before its expiry a minted access token stops
// being reused, so one is never forwarded in its last seconds.
const mintedMargin = 2 * time.Second

type tokenVerdict struct {
	token   VerifiedAccessToken
	known   bool
	expires time.Time
}

// AccessTokenVerifier is the integration-token check of the gateway, as
// KeyVerifier is the API-key check: it asks identity and caches each
// verdict, positive or negative, for at most its TTL (MaxKeyCacheTTL), so
// a revoked or expired token stops working within the TTL, a busy token
// costs identity one call per TTL, and guessing tokens does not turn into
// load on identity. A positive verdict is never kept past the minted
// access token's own expiry (less a margin). Concurrent misses of one
// token share one question to identity. Failures are not cached.
type AccessTokenVerifier struct {
	client *Client
	ttl    time.Duration
	now    func() time.Time

	mu    sync.Mutex
	cache map[[32]byte]tokenVerdict
	group singleflight.Group
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
	return &AccessTokenVerifier{client: client, ttl: ttl, now: time.Now, cache: map[[32]byte]tokenVerdict{}}, nil
}

// SetClock replaces the clock the cache expires by (tests move time).
func (v *AccessTokenVerifier) SetClock(now func() time.Time) { v.now = now }

// Verify returns identity's answer for tok; ErrUnknownAccessToken for a
// token that is not plausible (never asked about) or that identity
// refuses; or the errors of Client.VerifyAccessToken when identity cannot
// answer usefully.
func (v *AccessTokenVerifier) Verify(ctx context.Context, tok string) (VerifiedAccessToken, error) {
	if !PlausibleAccessToken(tok) {
		return VerifiedAccessToken{}, ErrUnknownAccessToken
	}
	h := sha256.Sum256([]byte(tok))
	v.mu.Lock()
	e, ok := v.cache[h]
	v.mu.Unlock()
	if !ok || !v.now().Before(e.expires) {
		res, err, _ := v.group.Do(string(h[:]), func() (any, error) {
			t, err := v.client.VerifyAccessToken(context.WithoutCancel(ctx), tok)
			if err != nil && !errors.Is(err, ErrUnknownAccessToken) {
				return tokenVerdict{}, err
			}
			at := v.now()
			fresh := tokenVerdict{token: t, known: err == nil, expires: at.Add(v.ttl)}
			if limit := at.Add(time.Duration(t.ExpiresIn)*time.Second - mintedMargin); fresh.known && limit.Before(fresh.expires) {
				fresh.expires = limit
			}
			v.mu.Lock()
			if len(v.cache) >= maxCachedKeys {
				clear(v.cache)
			}
			v.cache[h] = fresh
			v.mu.Unlock()
			return fresh, nil
		})
		if err != nil {
			return VerifiedAccessToken{}, err
		}
		e = res.(tokenVerdict)
	}
	if !e.known {
		return VerifiedAccessToken{}, ErrUnknownAccessToken
	}
	return e.token, nil
}
