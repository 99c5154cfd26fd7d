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

// Check is one limit a request counts against; its kind and key name the
// counter.
type Check struct {
	Kind, Key string
	// Limit is per minute; 0 or less turns the check off.
	Limit int
}

// Allow counts one request against each check that is on, in order and in
// one Redis round trip, stopping at the first limit exceeded: a request
// refused by one limit is not counted against the next. The quotas are
// those counted, the last one Limited when it stopped early; there are
// none when every check is off or Redis is unavailable (fail open).
func (l *Limiter) Allow(ctx context.Context, checks ...Check) []Quota {
	limits := make([]ratelimit.Limit, 0, len(checks))
	for _, c := range checks {
		if c.Limit > 0 {
			limits = append(limits, ratelimit.Limit{Key: l.prefix + c.Kind + ":" + c.Key, Max: c.Limit})
		}
	}
	if len(limits) == 0 || time.Now().UnixNano() < l.downUntil.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
	defer cancel()
	counts, err := ratelimit.TakeAll(ctx, l.rdb, window, limits...)
	if err != nil {
		l.downUntil.Store(time.Now().Add(time.Second).UnixNano())
		l.log.WarnContext(ctx, "rate limiter unavailable, failing open", "error", err.Error())
		return nil
	}
	quotas := make([]Quota, len(counts))
	for i, c := range counts {
		limit := limits[i].Max
		quotas[i] = Quota{Limit: limit, Remaining: c.Remaining(limit), Reset: c.ResetSeconds(), Limited: c.N > limit}
	}
	return quotas
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
