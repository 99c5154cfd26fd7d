package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/ratelimit"

	"github.com/opencrm/crm/services/identity/internal/identity"
)

// Throttle counts login attempts in Redis, shared by every replica: the
// fixed window of pkg/ratelimit, opened by a key's first attempt and never
// extended by later ones, so no count blocks longer than one window. Keys
// are hashes (of email, IP or both), so Redis holds no personal data.
type Throttle struct {
	rdb    redis.UniversalClient
	prefix string
	window time.Duration
}

var _ identity.Throttle = (*Throttle)(nil)

// NewThrottle counts in windows of the given length; prefix namespaces the
// keys.
func NewThrottle(rdb redis.UniversalClient, prefix string, window time.Duration) (*Throttle, error) {
	if rdb == nil || window <= 0 {
		return nil, errors.New("store: throttle needs redis and a window")
	}
	return &Throttle{rdb: rdb, prefix: prefix, window: window}, nil
}

// key keeps the name of the failure counter it replaces, so replicas of
// either version share one count during a rolling deploy.
func (t *Throttle) key(k string) string { return t.prefix + "login-failures:" + k }

// Take counts one attempt (INCR and window in one script, so concurrent
// attempts get distinct counts) and reports whether it is beyond limit and
// the rest of the window.
func (t *Throttle) Take(ctx context.Context, k string, limit int) (time.Duration, bool, error) {
	c, err := ratelimit.Take(ctx, t.rdb, t.key(k), t.window)
	if err != nil {
		return 0, false, unavailable("throttle take", err)
	}
	if c.N <= limit {
		return 0, false, nil
	}
	return max(c.TTL, time.Second), true, nil
}

// unavailable keeps the cause for the log while the client is told to
// retry in five seconds: login refuses to run unthrottled, so without Redis
// it is briefly unavailable rather than broken.
func unavailable(op string, err error) error {
	return fmt.Errorf("%s: %v: %w", op, err, fault.Unavailablef(5, "login is temporarily unavailable"))
}

// Reset clears the attempts of a key.
func (t *Throttle) Reset(ctx context.Context, k string) error {
	return t.rdb.Del(ctx, t.key(k)).Err()
}

// forgive decrements a live counter only: DECR on an expired key would
// create one without expiry.
var forgive = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('DECR', KEYS[1])
end
return 0
`)

// Forgive takes back one attempt of a key (one that succeeded).
func (t *Throttle) Forgive(ctx context.Context, k string) error {
	return forgive.Run(ctx, t.rdb, []string{t.key(k)}).Err()
}

func (t *Throttle) knownKey(k string) string { return t.prefix + "login-known:" + k }

// Remember marks a key as known for ttl.
func (t *Throttle) Remember(ctx context.Context, k string, ttl time.Duration) error {
	return t.rdb.Set(ctx, t.knownKey(k), 1, ttl).Err()
}

// Known reports whether a key was remembered and has not expired.
func (t *Throttle) Known(ctx context.Context, k string) (bool, error) {
	n, err := t.rdb.Exists(ctx, t.knownKey(k)).Result()
	if err != nil {
		return false, unavailable("throttle known", err)
	}
	return n == 1, nil
}
