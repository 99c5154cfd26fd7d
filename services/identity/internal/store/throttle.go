package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/ratelimit"

	"github.com/opencrm/crm/services/identity/internal/identity"
)

// Throttle counts failed logins in Redis, shared by every replica: a fixed
// window opened by the first failure. Keys are hashes of (email, IP), so
// Redis holds no personal data.
type Throttle struct {
	rdb    redis.UniversalClient
	prefix string
	limit  int
	window time.Duration
}

var _ identity.Throttle = (*Throttle)(nil)

// NewThrottle allows limit failures per window; prefix namespaces the keys.
func NewThrottle(rdb redis.UniversalClient, prefix string, limit int, window time.Duration) (*Throttle, error) {
	if rdb == nil || limit < 0 || window <= 0 {
		return nil, errors.New("store: throttle needs redis, a limit ≥ 0 and a window")
	}
	return &Throttle{rdb: rdb, prefix: prefix, limit: limit, window: window}, nil
}

func (t *Throttle) key(k string) string { return t.prefix + "login-failures:" + k }

// Blocked reports whether the key reached the limit and the window's rest.
func (t *Throttle) Blocked(ctx context.Context, k string) (time.Duration, bool, error) {
	if t.limit == 0 {
		return 0, false, nil
	}
	n, err := t.rdb.Get(ctx, t.key(k)).Int()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, unavailable("throttle get", err)
	}
	if n < t.limit {
		return 0, false, nil
	}
	ttl, err := t.rdb.PTTL(ctx, t.key(k)).Result()
	if err != nil {
		return 0, false, unavailable("throttle ttl", err)
	}
	if ttl <= 0 {
		ttl = time.Second
	}
	return ttl, true, nil
}

// Fail records one failure: the count and its window are the shared fixed
// window of pkg/ratelimit, opened by the first failure.
func (t *Throttle) Fail(ctx context.Context, k string) error {
	if _, err := ratelimit.Take(ctx, t.rdb, t.key(k), t.window); err != nil {
		return unavailable("throttle fail", err)
	}
	return nil
}

// unavailable keeps the cause for the log while the client sees 503: login
// refuses to run unthrottled, so without Redis it is briefly unavailable
// rather than broken.
func unavailable(op string, err error) error {
	return fmt.Errorf("%s: %v: %w", op, err, problem.Unavailable("login is temporarily unavailable", 5))
}

// Reset clears the failures of a key.
func (t *Throttle) Reset(ctx context.Context, k string) error {
	return t.rdb.Del(ctx, t.key(k)).Err()
}
