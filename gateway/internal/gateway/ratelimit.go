package gateway

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// window is the rate-limit window; limits are configured per minute.
const window = time.Minute

// fixedWindow increments the counter and starts its window atomically, so
// concurrent gateways share one count and a key can never be left without
// an expiry (which INCR then EXPIRE as two calls could do).
var fixedWindow = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}
`)

// Quota is the outcome of one rate-limit check.
type Quota struct {
	Limit     int
	Remaining int
	// Reset is the number of seconds until the window restarts (≥ 1).
	Reset   int
	Limited bool
}

// Limiter counts requests per key in Redis with fixed one-minute windows.
// When Redis fails it lets requests through (limits are protection, not
// correctness) and stops asking Redis for a second, so an outage costs one
// timeout per second instead of one per request.
type Limiter struct {
	rdb       *redis.Client
	prefix    string
	downUntil atomic.Int64
	log       *slog.Logger
}

// NewLimiter uses rdb with keys under prefix.
func NewLimiter(rdb *redis.Client, prefix string, log *slog.Logger) *Limiter {
	return &Limiter{rdb: rdb, prefix: prefix, log: log}
}

// Allow counts one request for key against limit per minute. ok is false
// when the limit is off or Redis is unavailable (fail open).
func (l *Limiter) Allow(ctx context.Context, kind, key string, limit int) (q Quota, ok bool) {
	if limit <= 0 {
		return Quota{}, false
	}
	if time.Now().UnixNano() < l.downUntil.Load() {
		return Quota{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
	defer cancel()
	res, err := fixedWindow.Run(ctx, l.rdb, []string{l.prefix + kind + ":" + key}, window.Milliseconds()).Int64Slice()
	if err != nil || len(res) != 2 {
		l.downUntil.Store(time.Now().Add(time.Second).UnixNano())
		l.log.WarnContext(ctx, "rate limiter unavailable, failing open", "error", errString(err))
		return Quota{}, false
	}
	n, ttl := int(res[0]), res[1]
	reset := int((ttl + 999) / 1000)
	if reset < 1 {
		reset = 1
	}
	return Quota{Limit: limit, Remaining: max(0, limit-n), Reset: reset, Limited: n > limit}, true
}

func errString(err error) string {
	if err == nil {
		return "unexpected reply"
	}
	return err.Error()
}
