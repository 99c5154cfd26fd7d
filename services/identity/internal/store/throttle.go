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

// Throttle counts login attempts in Redis, shared by every replica: the
// fixed window of pkg/ratelimit, opened by the first attempt after the last
// successful login (which deletes the count). Keys are hashes of (email,
// IP), so Redis holds no personal data.
type Throttle struct {
	rdb    redis.UniversalClient
	prefix string
	limit  int
	window time.Duration
}

var _ identity.Throttle = (*Throttle)(nil)

// NewThrottle allows limit attempts per window; prefix namespaces the keys.
func NewThrottle(rdb redis.UniversalClient, prefix string, limit int, window time.Duration) (*Throttle, error) {
	if rdb == nil || limit < 0 || window <= 0 {
		return nil, errors.New("store: throttle needs redis, a limit ≥ 0 and a window")
	}
	return &Throttle{rdb: rdb, prefix: prefix, limit: limit, window: window}, nil
}

// key keeps the name of the failure counter it replaces, so replicas of
// either version share one count during a rolling deploy.
func (t *Throttle) key(k string) string { return t.prefix + "login-failures:" + k }

// Take counts one attempt (INCR and window in one script, so concurrent
// attempts get distinct counts) and reports whether it is beyond the limit
// and the rest of the window.
func (t *Throttle) Take(ctx context.Context, k string) (time.Duration, bool, error) {
	if t.limit == 0 {
		return 0, false, nil
	}
	c, err := ratelimit.Take(ctx, t.rdb, t.key(k), t.window)
	if err != nil {
		return 0, false, unavailable("throttle take", err)
	}
	if c.N <= t.limit {
		return 0, false, nil
	}
	return max(c.TTL, time.Second), true, nil
}

// unavailable keeps the cause for the log while the client sees 503: login
// refuses to run unthrottled, so without Redis it is briefly unavailable
// rather than broken.
func unavailable(op string, err error) error {
	return fmt.Errorf("%s: %v: %w", op, err, problem.Unavailable("login is temporarily unavailable", 5))
}

// Reset clears the attempts of a key.
func (t *Throttle) Reset(ctx context.Context, k string) error {
	return t.rdb.Del(ctx, t.key(k)).Err()
}
