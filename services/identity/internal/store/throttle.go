package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/problem"

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

// failScript increments and opens the window on the first failure, in one
// round trip so a crash between INCR and PEXPIRE cannot leave an eternal key.
var failScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return n`)

// Fail records one failure.
func (t *Throttle) Fail(ctx context.Context, k string) error {
	if err := failScript.Run(ctx, t.rdb, []string{t.key(k)}, t.window.Milliseconds()).Err(); err != nil {
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
