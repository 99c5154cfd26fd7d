package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/problem"
)

// AccessChangesKey is the Redis key where identity publishes the users
// whose access was reduced recently (deactivated, deleted or demoted). An
// access token is self-contained for its 15 minutes; this short list is
// what lets every service and the gateway refuse, within seconds, a token
// issued before such a change.
const AccessChangesKey = "crm:auth:access-changes"

// AccessWindow is how long a reduction stays in the list: past it every
// token issued before the change has expired (lifetime plus leeway), and
// tokens issued after it carry the reduced rights already.
const AccessWindow = 15*time.Minute + 2*Leeway

// AccessChange is the current state of a user whose access was reduced
// within AccessWindow.
type AccessChange struct {
	UserID int64  `json:"id"`
	Active bool   `json:"active"`
	Role   string `json:"role"`
	// RevokedAt, when set, is the last deactivation: tokens issued before
	// it (or in its second) stay refused even after a reactivation.
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// PublishAccessChanges replaces the list at key (identity only; key is
// AccessChangesKey outside tests). The whole list is one value, so readers
// see one consistent state per fetch.
func PublishAccessChanges(ctx context.Context, rdb redis.Cmdable, key string, changes []AccessChange) error {
	if changes == nil {
		changes = []AccessChange{}
	}
	b, err := json.Marshal(changes)
	if err != nil {
		return err
	}
	return rdb.Set(ctx, key, b, 0).Err()
}

// Revocations applies the published access changes to verified claims. It
// rereads the list at most once per MaxAge, synchronously when a request
// finds it older, so even a service idle for an hour never judges a token
// on a stale list. When Redis is unreachable it keeps the last list (and
// retries after MaxAge): tokens still expire within 15 minutes, and a
// Redis outage must not turn into an API outage.
type Revocations struct {
	rdb redis.Cmdable
	log *slog.Logger
	// Key is where the list is read, AccessChangesKey unless a test
	// isolates itself.
	Key string
	// MaxAge bounds how old the list may be when a token is judged.
	MaxAge time.Duration
	// FetchTimeout bounds one read of the list.
	FetchTimeout time.Duration

	mu      sync.Mutex
	fetched time.Time
	raw     string
	byUser  map[int64]AccessChange
}

// NewRevocations reads the list from rdb.
func NewRevocations(rdb redis.Cmdable, log *slog.Logger) (*Revocations, error) {
	if rdb == nil || log == nil {
		return nil, fmt.Errorf("auth: revocations need redis and a logger")
	}
	return &Revocations{rdb: rdb, log: log, Key: AccessChangesKey, MaxAge: time.Second, FetchTimeout: 250 * time.Millisecond}, nil
}

// lookup returns the user's change, rereading the list when it is older
// than MaxAge. Concurrent requests wait for the one read in flight.
func (r *Revocations) lookup(ctx context.Context, userID int64) (AccessChange, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.fetched) >= r.MaxAge {
		r.fetched = time.Now()
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.FetchTimeout)
		raw, err := r.rdb.Get(fctx, r.Key).Result()
		cancel()
		switch {
		case err == redis.Nil:
			r.raw, r.byUser = "", nil
		case err != nil:
			r.log.WarnContext(ctx, "access changes unavailable; using the last list", "error", err.Error())
		case raw != r.raw:
			var list []AccessChange
			if err := json.Unmarshal([]byte(raw), &list); err != nil {
				r.log.ErrorContext(ctx, "access changes undecodable; using the last list", "error", err.Error())
				break
			}
			m := make(map[int64]AccessChange, len(list))
			for _, c := range list {
				m[c.UserID] = c
			}
			r.raw, r.byUser = raw, m
		}
	}
	c, ok := r.byUser[userID]
	return c, ok
}

// Apply refuses the claims of a deactivated user and of a token issued
// before the user's last deactivation (401), and lowers an admin token's
// role to the user's current one, so a demoted admin's token passes no
// admin check (403) while it keeps working for what a user may do.
func (r *Revocations) Apply(ctx context.Context, c *Claims) error {
	ch, ok := r.lookup(ctx, c.UserID())
	if !ok {
		return nil
	}
	if !ch.Active {
		return problem.Unauthenticated("access token revoked")
	}
	// iat has whole seconds: a token of the deactivation's own second is
	// refused too, so none issued before it survives a reactivation.
	if ch.RevokedAt != nil && (c.IssuedAt == nil || c.IssuedAt.Unix() <= ch.RevokedAt.Unix()) {
		return problem.Unauthenticated("access token revoked")
	}
	if c.Role == RoleAdmin && ch.Role != RoleAdmin {
		c.Role = RoleUser
	}
	return nil
}
