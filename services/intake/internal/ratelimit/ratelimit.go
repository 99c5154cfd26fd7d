// Package ratelimit counts requests per API key in Redis (pkg/ratelimit), so
// every intake replica shares one quota per key.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/ratelimit"
	"github.com/opencrm/crm/services/intake/internal/intake"
)

// Window is the length of one quota window.
const Window = time.Minute

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
	c, err := ratelimit.Take(ctx, l.rdb, l.prefix+strconv.FormatInt(keyID, 10), Window)
	if err != nil {
		return intake.Quota{}, fmt.Errorf("rate limit: %w", err)
	}
	return intake.Quota{Allowed: c.N <= limit, Limit: limit, Remaining: c.Remaining(limit), Reset: c.TTL}, nil
}
