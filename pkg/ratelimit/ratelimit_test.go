package ratelimit_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/ratelimit"
)

func TestTake(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	t.Cleanup(func() { _ = rdb.Close() })
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	key := "test:rl:" + hex.EncodeToString(b)
	t.Cleanup(func() { rdb.Del(context.Background(), key) })

	for i := 1; i <= 3; i++ {
		c, err := ratelimit.Take(ctx, rdb, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if c.N != i || c.TTL <= 0 || c.TTL > time.Minute {
			t.Fatalf("take %d = %+v", i, c)
		}
		if got, want := c.Remaining(2), max(0, 2-i); got != want {
			t.Errorf("take %d: Remaining(2) = %d, want %d", i, got, want)
		}
		if got := c.ResetSeconds(); got < 59 || got > 60 {
			t.Errorf("take %d: ResetSeconds = %d, want 59 or 60", i, got)
		}
	}

	// A counter that lost its expiry gets one again.
	if err := rdb.Persist(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	c, err := ratelimit.Take(ctx, rdb, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if c.N != 4 || c.TTL != time.Minute {
		t.Errorf("after PERSIST: %+v, want N 4, TTL 1m", c)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 {
		t.Errorf("PTTL after take = %v, want an expiry", ttl)
	}
}

// TestTakeAll: each limit is counted in order until one is exceeded; the
// later ones are not counted for that request.
func TestTakeAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	t.Cleanup(func() { _ = rdb.Close() })
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	ip, user := "test:rl:ip:"+hex.EncodeToString(b), "test:rl:user:"+hex.EncodeToString(b)
	t.Cleanup(func() { rdb.Del(context.Background(), ip, user) })

	// The user's limit is reached first, then the IP's.
	limits := []ratelimit.Limit{{Key: ip, Max: 3}, {Key: user, Max: 1}}
	for i, want := range [][]int{{1, 1}, {2, 2}, {3, 3}, {4}, {5}} {
		counts, err := ratelimit.TakeAll(ctx, rdb, time.Minute, limits...)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, c := range counts {
			if c.TTL <= 0 || c.TTL > time.Minute {
				t.Errorf("take %d: TTL %v, want within the minute", i+1, c.TTL)
			}
			got = append(got, c.N)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("take %d: counts (-want +got):\n%s", i+1, diff)
		}
	}
	// The requests the IP refused were not counted against the user.
	if n, err := rdb.Get(ctx, user).Int(); err != nil || n != 3 {
		t.Errorf("user counter = %d, %v; want 3", n, err)
	}
}

func TestResetSeconds(t *testing.T) {
	for _, tc := range []struct {
		ttl  time.Duration
		want int
	}{{0, 1}, {time.Millisecond, 1}, {1000 * time.Millisecond, 1}, {1001 * time.Millisecond, 2}, {time.Minute, 60}} {
		if got := (ratelimit.Count{TTL: tc.ttl}).ResetSeconds(); got != tc.want {
			t.Errorf("ResetSeconds(%v) = %d, want %d", tc.ttl, got, tc.want)
		}
	}
}
