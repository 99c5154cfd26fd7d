package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/services/identity/internal/store"
)

// publishAccessLoop republishes, every second, the users whose access was
// reduced recently (auth.AccessChangesKey): the database is the source of
// truth, so a change is seen by every verifier within about two seconds
// (this loop, then their one-second cache), and a lost Redis write or a
// flushed Redis heals on the next tick. Every replica may run it.
func publishAccessLoop(ctx context.Context, st *store.Store, rdb *redis.Client, log *slog.Logger) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	failing := false
	for {
		changes, err := st.AccessChanges(ctx, auth.AccessWindow)
		if err == nil {
			err = auth.PublishAccessChanges(ctx, rdb, auth.AccessChangesKey, changes)
		}
		if err != nil && ctx.Err() == nil && !failing {
			log.Warn("publish access changes failed", "error", err.Error())
		}
		failing = err != nil
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// purgeLoop deletes refresh tokens a day after they expired; spent tokens
// are kept until then so reuse detection still works.
func purgeLoop(ctx context.Context, st *store.Store, log *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if n, err := st.PurgeRefreshTokens(ctx, 24*time.Hour); err != nil && ctx.Err() == nil {
			log.Warn("purge refresh tokens failed", "error", err.Error())
		} else if n > 0 {
			log.Info("purged expired refresh tokens", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
