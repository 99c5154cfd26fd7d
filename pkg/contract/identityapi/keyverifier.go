package identityapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// MaxKeyCacheTTL is the longest a verdict may be reused: a revoked key is
// refused everywhere within 5 s (docs/decisions.md).
const MaxKeyCacheTTL = 5 * time.Second

// MaxKeyLength refuses absurd header values before asking identity.
const MaxKeyLength = 256

// maxCachedKeys bounds the cache; a flood of random keys can only make it
// start over, never grow without limit.
const maxCachedKeys = 10_000

type verdict struct {
	key     VerifiedKey
	known   bool
	expires time.Time
}

// KeyVerifier is the one API-key check of the platform: it asks identity
// and caches each verdict, positive or negative, for at most its TTL, so a
// burst of submissions costs identity one call per key, guessing keys does
// not turn into load on identity, and a revoked key stops working within
// the TTL. Concurrent misses of one key share one question to identity (a
// busy key whose entry just expired would otherwise send a burst that
// could time out). Failures of identity are not cached.
type KeyVerifier struct {
	client *Client
	ttl    time.Duration
	now    func() time.Time

	mu    sync.Mutex
	cache map[[32]byte]verdict
	group singleflight.Group
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
	return &KeyVerifier{client: client, ttl: ttl, now: time.Now, cache: map[[32]byte]verdict{}}, nil
}

// SetClock replaces the clock the cache expires by (tests move time).
func (v *KeyVerifier) SetClock(now func() time.Time) { v.now = now }

// Verify returns the key's record; ErrUnknownKey for an empty, malformed,
// unknown or revoked key; or the problem error (503, 504, 502) of an
// identity that cannot answer.
func (v *KeyVerifier) Verify(ctx context.Context, secret string) (VerifiedKey, error) {
	if secret == "" || len(secret) > MaxKeyLength || strings.ContainsAny(secret, " \t\r\n") {
		return VerifiedKey{}, ErrUnknownKey
	}
	h := sha256.Sum256([]byte(secret))
	v.mu.Lock()
	e, ok := v.cache[h]
	v.mu.Unlock()
	if !ok || !v.now().Before(e.expires) {
		res, err, _ := v.group.Do(string(h[:]), func() (any, error) {
			k, err := v.client.VerifyKey(context.WithoutCancel(ctx), secret)
			if err != nil && !errors.Is(err, ErrUnknownKey) {
				return verdict{}, err
			}
			fresh := verdict{key: k, known: err == nil, expires: v.now().Add(v.ttl)}
			v.mu.Lock()
			if len(v.cache) >= maxCachedKeys {
				clear(v.cache)
			}
			v.cache[h] = fresh
			v.mu.Unlock()
			return fresh, nil
		})
		if err != nil {
			return VerifiedKey{}, err
		}
		e = res.(verdict)
	}
	if !e.known {
		return VerifiedKey{}, ErrUnknownKey
	}
	return e.key, nil
}
