// Package rendertest gives the render tests an isolated slice of the shared
// Redis: its own DB number (9 unless RENDER_TEST_REDIS_URL says otherwise),
// its own queue and key prefix per test, and a cleanup that removes both. So
// the tests run in parallel with each other and with other teams' tests.
package rendertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/renderq"
)

// RedisURL is the Redis the render tests use.
func RedisURL() string {
	if u := os.Getenv("RENDER_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/9"
}

// Env is one test's queues and Redis.
type Env struct {
	Config renderq.Config
	Redis  *redis.Client
}

// New returns a fresh prefix and registers the cleanup of its queues and keys.
func New(t testing.TB) Env {
	t.Helper()
	opt, err := redis.ParseURL(RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis at %s: %v", RedisURL(), err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	q := renderq.Queues{Prefix: "rtest-" + hex.EncodeToString(b)}
	t.Cleanup(func() {
		insp := asynq.NewInspectorFromRedisClient(rdb)
		for _, name := range q.All() {
			_ = insp.DeleteQueue(name, true)
		}
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, q.Prefix+":*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		rdb.Close()
	})
	return Env{
		Config: renderq.Config{RedisURL: RedisURL(), Queues: q, Wait: 30 * time.Second, ResultTTL: time.Hour, MaxRetry: 3},
		Redis:  rdb,
	}
}

// Client returns a client of the environment, closed at cleanup.
func (e Env) Client(t testing.TB) *renderq.Client {
	t.Helper()
	c, err := renderq.NewClient(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// WaitForWorker blocks until a worker consumes the interactive queue.
func (e Env) WaitForWorker(t testing.TB) {
	t.Helper()
	insp := asynq.NewInspectorFromRedisClient(e.Redis)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		servers, _ := insp.Servers()
		for _, s := range servers {
			if _, ok := s.Queues[e.Config.Queues.Name(renderq.Interactive)]; ok && s.Status == "active" {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no worker came up")
}
