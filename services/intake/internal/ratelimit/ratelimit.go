// Package ratelimit counts requests per API key in Redis, so every intake
// replica shares one quota per key.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/services/intake/internal/intake"
)

// Window is the length of one quota window.
const Window = time.Minute

// take counts one request in the key's current window atomically: INCR and
// the window's expiry happen in one script, so a crash between them cannot
// leave a counter that never expires.
var take = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}
`)

// Limiter implements intake.Limiter with a fixed one-minute window per key
// that starts at the key's first request.
type Limiter struct {
	rdb    redis.Scripter
	prefix string
}

// New counts in rdb under keys starting with prefix (e.g. "crm:intake:rl:").
func New(rdb redis.Scripter, prefix string) (*Limiter, error) {
	if rdb == nil || prefix == "" {
		return nil, errors.New("ratelimit: needs a redis client and a key prefix")
	}
	return &Limiter{rdb: rdb, prefix: prefix}, nil
}

var _ intake.Limiter = (*Limiter)(nil)

// Take implements intake.Limiter.
func (l *Limiter) Take(ctx context.Context, keyID int64, limit int) (intake.Quota, error) {
	res, err := take.Run(ctx, l.rdb, []string{l.prefix + strconv.FormatInt(keyID, 10)}, Window.Milliseconds()).Int64Slice()
	if err != nil {
		return intake.Quota{}, fmt.Errorf("rate limit: %w", err)
	}
	if len(res) != 2 {
		return intake.Quota{}, fmt.Errorf("rate limit: unexpected answer %v", res)
	}
	count, ttl := int(res[0]), time.Duration(res[1])*time.Millisecond
	remaining := limit - count
	if remaining < 0 {
		remaining = 0
	}
	return intake.Quota{Allowed: count <= limit, Limit: limit, Remaining: remaining, Reset: ttl}, nil
}
