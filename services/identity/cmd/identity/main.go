// Command identity runs the identity service: login and sessions, signing
// keys (JWKS), users, teams and API keys.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/pkg/validate"
	"github.com/opencrm/crm/services/identity/internal/api"
	"github.com/opencrm/crm/services/identity/internal/identity"
	"github.com/opencrm/crm/services/identity/internal/store"
	"github.com/opencrm/crm/services/identity/migrations"
)

// schema is identity's PostgreSQL schema.
const schema = "identity"

// redisPrefix namespaces identity's Redis keys (login throttling).
const redisPrefix = "crm:identity:"

// throttleWindow is the login-failure window of every CRM_LOGIN_FAILURES_*
// count; a count never blocks longer than one window.
const throttleWindow = 15 * time.Minute

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		slog.Error("identity stopped", "error", err.Error())
		os.Exit(1)
	}
}

// cfg is the process configuration, read once from the environment.
type cfg struct {
	platform.Settings
	SecretKey     string
	AdminEmail    string
	AdminPassword string
	LoginLimits   identity.Limits
	// HashConcurrency bounds concurrent password hashes (19 MiB each).
	HashConcurrency int
	AccessTTL       time.Duration
	RefreshTTL      time.Duration
	TrustedProxies  *api.ClientIP
}

func loadConfig(l *config.Loader) (cfg, error) {
	c := cfg{Settings: platform.Load(l, ":8081")}
	c.SecretKey = l.String("CRM_SECRET_KEY", "")
	l.Check(c.SecretKey == "" || len(c.SecretKey) >= 32, "CRM_SECRET_KEY", "must be at least 32 characters")
	c.AdminEmail = l.String("CRM_ADMIN_EMAIL", "")
	c.AdminPassword = l.String("CRM_ADMIN_PASSWORD", "")
	if c.AdminEmail != "" {
		l.Check(validate.IsEmail(c.AdminEmail), "CRM_ADMIN_EMAIL", "must be a valid email address")
		l.Check(len([]rune(c.AdminPassword)) >= identity.MinPasswordLength, "CRM_ADMIN_PASSWORD",
			fmt.Sprintf("must be set and at least %d characters when CRM_ADMIN_EMAIL is set", identity.MinPasswordLength))
	} else {
		l.Check(c.AdminPassword == "", "CRM_ADMIN_EMAIL", "is required when CRM_ADMIN_PASSWORD is set")
	}
	c.LoginLimits = identity.Limits{
		PerEmailIP: l.Int("CRM_LOGIN_FAILURES_PER_15M", 10, 0, 1_000_000),
		PerEmail:   l.Int("CRM_LOGIN_FAILURES_PER_EMAIL_15M", 30, 0, 1_000_000),
		PerIP:      l.Int("CRM_LOGIN_FAILURES_PER_IP_15M", 20, 0, 1_000_000),
	}
	// Bounded by memory, not only CPU: GOMAXPROCS is the node's core count
	// when a container has no CPU limit, and 32 hashes would need 600 MiB.
	c.HashConcurrency = l.Int("CRM_PASSWORD_HASH_CONCURRENCY", min(2*runtime.GOMAXPROCS(0), 8), 1, 64)
	c.AccessTTL = l.Duration("CRM_ACCESS_TTL", 15*time.Minute)
	c.RefreshTTL = l.Duration("CRM_REFRESH_TTL", 720*time.Hour)
	l.Check(c.AccessTTL >= time.Minute && c.AccessTTL <= 24*time.Hour, "CRM_ACCESS_TTL", "must be between 1m and 24h")
	l.Check(c.RefreshTTL > c.AccessTTL, "CRM_REFRESH_TTL", "must be longer than CRM_ACCESS_TTL")
	proxies, err := api.ParseTrustedProxies(l.String("CRM_TRUSTED_PROXIES", ""))
	l.Check(err == nil, "CRM_TRUSTED_PROXIES", fmt.Sprint(err))
	c.TrustedProxies = proxies
	return c, l.Err()
}

func run(ctx context.Context) error {
	c, err := loadConfig(config.New())
	if err != nil {
		return err
	}
	// Identity issues the tokens: it verifies them with its own keyring,
	// built below, rather than with a JWKS fetched from itself. Readiness
	// treats Redis as optional: only login needs it (its throttle answers
	// 503 without it); JWKS, refresh and API-key checks keep working, so a
	// Redis blip must not take identity out of rotation.
	rt, err := platform.Open(ctx, "identity", schema, c.Settings, migrate, platform.Issuer())
	if err != nil {
		return err
	}
	defer rt.Close()
	log, d, rdb := rt.Log, rt.DB, rt.Redis

	st := store.New(d)
	sealer, err := identity.NewSealer(c.SecretKey)
	if err != nil {
		return err
	}
	if !sealer.Encrypted() {
		log.Warn("CRM_SECRET_KEY is not set: signing keys are stored unencrypted (development only)")
	}
	keys, err := identity.NewKeyring(ctx, st, sealer, identity.PolicyFor(c.AccessTTL))
	if err != nil {
		return err
	}
	hasher, err := identity.NewHasher(identity.DefaultArgon2, c.HashConcurrency)
	if err != nil {
		return err
	}
	throttle, err := store.NewThrottle(rdb, redisPrefix, throttleWindow)
	if err != nil {
		return err
	}
	svc, err := identity.NewService(st, hasher, keys, throttle, identity.Config{
		AccessTTL: c.AccessTTL, RefreshTTL: c.RefreshTTL, Limits: c.LoginLimits,
	}, log)
	if err != nil {
		return err
	}
	if c.AdminEmail != "" {
		u, created, err := svc.BootstrapAdmin(ctx, c.AdminEmail, c.AdminPassword)
		if err != nil {
			return err
		}
		if created {
			log.Info("bootstrap admin created", "user_id", u.ID, "email", u.Email)
		}
	}
	revocations, err := auth.NewRevocations(rdb, log)
	if err != nil {
		return err
	}
	verifier, err := auth.NewVerifier(keys, auth.Issuer, auth.Audience, auth.WithRevocations(revocations))
	if err != nil {
		return err
	}
	handlers, err := api.New(svc, verifier, c.InternalSecret, c.TrustedProxies)
	if err != nil {
		return err
	}
	stop := platform.Background(ctx,
		(&outbox.Relay{DB: d, Redis: rdb, Log: log}).Run,
		func(ctx context.Context) { purgeLoop(ctx, st, log) },
		func(ctx context.Context) { publishAccessLoop(ctx, st, rdb, log) },
	)
	defer stop()

	log.Info("identity listening", "addr", c.Addr)
	err = httpx.Serve(ctx, c.Addr, rt.Ops.Handler(handlers.Routes()), c.Shutdown, nil)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// migrate applies identity's migrations and the outbox's.
func migrate(ctx context.Context, d *db.DB) error {
	if err := db.Migrate(ctx, d, schema, migrations.FS); err != nil {
		return err
	}
	return outbox.Migrate(ctx, d)
}

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
