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

// take counts one request against each of KEYS in order, starting a
// key's window (ARGV[1] ms) with its first request, and stops after the
// first key over its limit (ARGV[i+1]; none: no limit). It runs as one
// script, so concurrent replicas share each count, a key is never left
// without an expiry (as INCR then EXPIRE as two calls could leave it), and
// any number of limits costs one round trip.
var take = redis.NewScript(`
local out = {}
for i, key in ipairs(KEYS) do
  local n = redis.call('INCR', key)
  local ttl = redis.call('PTTL', key)
  if ttl < 0 then
    redis.call('PEXPIRE', key, ARGV[1])
    ttl = tonumber(ARGV[1])
  end
  out[#out + 1] = n
  out[#out + 1] = ttl
  local limit = tonumber(ARGV[i + 1])
  if limit and n > limit then
    break
  end
end
return out
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
	c, err := run(ctx, rdb, []string{key}, []any{window.Milliseconds()})
	if err != nil {
		return Count{}, err
	}
	return c[0], nil
}

// Limit is a key and the most requests its window admits.
type Limit struct {
	Key string
	Max int
}

// TakeAll counts one request against each limit in order, in one round
// trip, and stops at the first limit the request exceeds: a request
// refused by one limit is not counted against the later ones, as if each
// had been taken on its own and the caller had stopped at the refusal.
// The counts are those taken, the last one over its limit when it stopped
// early. Under Redis Cluster every key must hash to one slot.
func TakeAll(ctx context.Context, rdb redis.Scripter, window time.Duration, limits ...Limit) ([]Count, error) {
	keys, args := make([]string, len(limits)), make([]any, len(limits)+1)
	args[0] = window.Milliseconds()
	for i, l := range limits {
		keys[i], args[i+1] = l.Key, l.Max
	}
	return run(ctx, rdb, keys, args)
}

func run(ctx context.Context, rdb redis.Scripter, keys []string, args []any) ([]Count, error) {
	res, err := take.Run(ctx, rdb, keys, args...).Int64Slice()
	if err != nil {
		return nil, err
	}
	if len(res) == 0 || len(res)%2 != 0 || len(res) > 2*len(keys) {
		return nil, fmt.Errorf("unexpected answer %v", res)
	}
	counts := make([]Count, len(res)/2)
	for i := range counts {
		counts[i] = Count{N: int(res[2*i]), TTL: time.Duration(res[2*i+1]) * time.Millisecond}
	}
	return counts, nil
}

// Remaining is what is left of limit in the window (never below 0).
func (c Count) Remaining(limit int) int { return max(0, limit-c.N) }

// ResetSeconds is the TTL rounded up to whole seconds, at least 1.
func (c Count) ResetSeconds() int {
	return max(1, int((c.TTL+time.Second-1)/time.Second))
}
