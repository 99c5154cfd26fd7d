package db

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Option configures the pool Open makes.
type Option func(*pgxpool.Config)

// WithSession makes every connection carry, while a context holds it,
// the session settings values(ctx) gives for names (custom settings such
// as crm.actor, read by triggers with current_setting). They are set when
// a connection is taken for a context whose values differ from the ones
// the connection last had, and cleared ("") when a context has none
// (values returns nil), so nothing leaks from one request to the next.
// Statements outside a transaction and in one see them alike, which a
// SET LOCAL at the start of each transaction would not give. A connection
// taken again for the same values costs nothing; other values cost one
// round trip.
func WithSession(names []string, values func(ctx context.Context) []string) Option {
	return func(cfg *pgxpool.Config) {
		var (
			mu   sync.Mutex
			last = map[*pgx.Conn]string{}
		)
		sql := sessionSQL(names)
		unset := strings.Join(make([]string, len(names)), "\x00") // a new connection's
		cfg.PrepareConn = func(ctx context.Context, c *pgx.Conn) (bool, error) {
			vals := values(ctx)
			if vals == nil {
				vals = make([]string, len(names))
			}
			key := strings.Join(vals, "\x00")
			mu.Lock()
			prev, seen := last[c]
			mu.Unlock()
			if !seen {
				prev = unset
			}
			if prev == key {
				return true, nil
			}
			args := make([]any, len(vals))
			for i, v := range vals {
				args[i] = v
			}
			if _, err := c.Exec(ctx, sql, args...); err != nil {
				// The connection's settings are unknown now: drop it.
				return false, err
			}
			mu.Lock()
			last[c] = key
			mu.Unlock()
			return true, nil
		}
		cfg.BeforeClose = func(c *pgx.Conn) {
			mu.Lock()
			delete(last, c)
			mu.Unlock()
		}
	}
}

// sessionSQL is SELECT set_config('<name>', $n, false), ... for names,
// which are the caller's constants, not input.
func sessionSQL(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = "set_config('" + strings.ReplaceAll(n, "'", "''") + "', $" + strconv.Itoa(i+1) + ", false)"
	}
	return "SELECT " + strings.Join(parts, ", ")
}
