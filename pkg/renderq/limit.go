package renderq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultPerUser is how many renders one user may have in flight
// (RENDER_USER_INFLIGHT).
const DefaultPerUser = 2

// inflightScript takes a slot in a user's sorted set of renders in flight,
// scored by when each slot expires on its own (a client that died never
// releases). It answers {1, 0} when the slot is taken, else {0, the
// earliest expiry in ms}. One script, so two replicas of a service cannot
// both take the last slot.
var inflightScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
	local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
	return {0, tonumber(first[2])}
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
return {1, 0}
`)

// maxRetryAfterBusy caps the Retry-After of a refused render: the renders
// in flight usually end within a second or two (a seven-page contract
// prints in half a second), far before their slots would expire.
const maxRetryAfterBusy = 5 * time.Second

// DefaultCooldown is how long a render refused for its content
// (*TooLongError) keeps its slot (RENDER_REFUSAL_COOLDOWN).
const DefaultCooldown = 10 * time.Second

// acquire takes one of the user's in-flight slots for up to hold; the
// returned release frees it, or, given a cooldown, keeps it that much
// longer. An empty user is not limited (background jobs, the caller's own
// batch work).
func (c *Client) acquire(ctx context.Context, user string, hold time.Duration) (func(cooldown time.Duration), error) {
	if user == "" {
		return func(time.Duration) {}, nil
	}
	key := c.cfg.Queues.prefix() + ":inflight:" + user
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	member := hex.EncodeToString(b)
	now := time.Now()
	res, err := inflightScript.Run(ctx, c.rdb, []string{key},
		now.UnixMilli(), now.Add(hold).UnixMilli(), c.cfg.PerUser, member).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("renderq: in-flight limit: %w", err)
	}
	if res[0] == 0 {
		wait := min(time.UnixMilli(res[1]).Sub(now), maxRetryAfterBusy)
		return nil, &BusyError{Limit: c.cfg.PerUser, RetryAfter: max(wait, time.Second)}
	}
	return func(cooldown time.Duration) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		// A failed release only keeps the slot until it expires.
		if cooldown <= 0 {
			_ = c.rdb.ZRem(ctx, key, member).Err()
			return
		}
		until := time.Now().Add(cooldown).UnixMilli()
		_ = c.rdb.ZAddXX(ctx, key, redis.Z{Score: float64(until), Member: member}).Err()
	}, nil
}
