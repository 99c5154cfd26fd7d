package gateway

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/ratelimit"
)

// window is the rate-limit window; limits are configured per minute.
const window = time.Minute

// Quota is the outcome of one rate-limit check.
type Quota struct {
	Limit     int
	Remaining int
	// Reset is the number of seconds until the window restarts (≥ 1).
	Reset   int
	Limited bool
}

// Limiter counts requests per key in Redis with fixed one-minute windows
// (pkg/ratelimit). When Redis fails it lets requests through (limits are protection, not
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
	c, err := ratelimit.Take(ctx, l.rdb, l.prefix+kind+":"+key, window)
	if err != nil {
		l.downUntil.Store(time.Now().Add(time.Second).UnixNano())
		l.log.WarnContext(ctx, "rate limiter unavailable, failing open", "error", err.Error())
		return Quota{}, false
	}
	return Quota{Limit: limit, Remaining: c.Remaining(limit), Reset: c.ResetSeconds(), Limited: c.N > limit}, true
}
