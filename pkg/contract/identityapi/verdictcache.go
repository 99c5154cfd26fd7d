package identityapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// maxCachedKeys bounds a verdict cache; a flood of random secrets can only
// make it start over, never grow without limit.
const maxCachedKeys = 10_000

// verdictCache is what KeyVerifier and AccessTokenVerifier share: identity's
// verdict on a secret, positive or negative, kept by the secret's SHA-256
// for at most ttl, with concurrent misses of one secret sharing one
// question to identity. unknown is identity's "no such secret" answer,
// cached as a negative verdict; any other failure is not cached.
type verdictCache[T any] struct {
	ttl     time.Duration
	now     func() time.Time
	unknown error

	mu    sync.Mutex
	cache map[[32]byte]verdict[T]
	group singleflight.Group
}

type verdict[T any] struct {
	val     T
	known   bool
	expires time.Time
}

func newVerdictCache[T any](ttl time.Duration, unknown error) *verdictCache[T] {
	return &verdictCache[T]{ttl: ttl, now: time.Now, unknown: unknown, cache: map[[32]byte]verdict[T]{}}
}

// verify answers from the cache or asks identity (ask). until, when not
// nil, may shorten a positive verdict's life: it gets the answer and the
// time it came and returns the latest time it may be reused.
func (c *verdictCache[T]) verify(ctx context.Context, secret string, ask func(context.Context) (T, error),
	until func(T, time.Time) time.Time) (T, error) {
	h := sha256.Sum256([]byte(secret))
	c.mu.Lock()
	e, ok := c.cache[h]
	c.mu.Unlock()
	if !ok || !c.now().Before(e.expires) {
		res, err, _ := c.group.Do(string(h[:]), func() (any, error) {
			val, err := ask(context.WithoutCancel(ctx))
			if err != nil && !errors.Is(err, c.unknown) {
				return verdict[T]{}, err
			}
			at := c.now()
			fresh := verdict[T]{val: val, known: err == nil, expires: at.Add(c.ttl)}
			if until != nil && fresh.known {
				if limit := until(val, at); limit.Before(fresh.expires) {
					fresh.expires = limit
				}
			}
			c.mu.Lock()
			if len(c.cache) >= maxCachedKeys {
				clear(c.cache)
			}
			c.cache[h] = fresh
			c.mu.Unlock()
			return fresh, nil
		})
		if err != nil {
			var zero T
			return zero, err
		}
		e = res.(verdict[T])
	}
	if !e.known {
		var zero T
		return zero, c.unknown
	}
	return e.val, nil
}
