// Package ratelimit counts requests per key in Redis with fixed windows, so
// every replica of a service shares one count per key. Callers keep their
// own key prefixes, limits, failure policy and headers; this package only
// counts.
package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// take increments the counter and starts its window atomically, so
// concurrent replicas share one count and a key can never be left without
// an expiry (which INCR then EXPIRE as two calls could do).
var take = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}
`)

// Count is the state of a key's window after one request was counted.
type Count struct {
	// N is the number of requests counted in the window, this one included.
	N int
	// TTL is the time until the window starts over.
	TTL time.Duration
}

// Take counts one request for key in a fixed window of the given length
// that starts at the key's first request.
func Take(ctx context.Context, rdb redis.Scripter, key string, window time.Duration) (Count, error) {
	res, err := take.Run(ctx, rdb, []string{key}, window.Milliseconds()).Int64Slice()
	if err != nil {
		return Count{}, err
	}
	if len(res) != 2 {
		return Count{}, fmt.Errorf("unexpected answer %v", res)
	}
	return Count{N: int(res[0]), TTL: time.Duration(res[1]) * time.Millisecond}, nil
}

// Remaining is what is left of limit in the window (never below 0).
func (c Count) Remaining(limit int) int { return max(0, limit-c.N) }

// ResetSeconds is the TTL rounded up to whole seconds, at least 1.
func (c Count) ResetSeconds() int {
	return max(1, int((c.TTL+time.Second-1)/time.Second))
}
