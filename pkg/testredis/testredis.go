// Package testredis connects tests to the local Redis, as pkg/testdb does
// for PostgreSQL: each package names the environment variable that may
// point it elsewhere and the database it uses by default (a server's
// default 16 databases must do), and keeps to its own keys in it.
package testredis

import (
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

// URL is the value of env, or def when it is unset or empty.
func URL(env, def string) string {
	if u := os.Getenv(env); u != "" {
		return u
	}
	return def
}

// Client connects to URL(env, def) and closes the client when the test
// ends.
func Client(t testing.TB, env, def string) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(URL(env, def))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}
