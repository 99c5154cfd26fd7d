package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
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

// upstreamQuota reads a service's RateLimit-Limit/Remaining/Reset (intake
// limits per API key); nil unless all three are non-negative integers.
func upstreamQuota(h http.Header) *Quota {
	var v [3]int
	for i, name := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
		vs := h.Values(name)
		if len(vs) != 1 {
			return nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(vs[0]))
		if err != nil || n < 0 {
			return nil
		}
		v[i] = n
	}
	return &Quota{Limit: v[0], Remaining: v[1], Reset: v[2], Limited: v[1] == 0}
}

// tighterThan reports whether q (a service's quota) is at least as tight
// as the gateway's g: fewer or as many requests remaining, compared as
// the gateway compares its own limits. A nil q is never tighter.
func (q *Quota) tighterThan(g *Quota) bool {
	if q == nil {
		return false
	}
	if g == nil {
		return true
	}
	return q.Remaining <= g.Remaining
}
