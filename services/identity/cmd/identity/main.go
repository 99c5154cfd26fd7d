// Command identity runs the identity service: login and sessions, signing
// keys (JWKS), users, teams and API keys.
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/gogc"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/pkg/svcclient"
	"github.com/opencrm/crm/services/identity/internal/api"
	"github.com/opencrm/crm/services/identity/internal/identity"
	"github.com/opencrm/crm/services/identity/internal/store"
	"github.com/opencrm/crm/services/identity/migrations"
)

// schema is identity's PostgreSQL schema.
const schema = "identity"

// redisPrefix namespaces identity's Redis keys (login throttling).
const redisPrefix = "crm:identity:"

// auditGroup is the consumer group identity reads the audit stream in.
const auditGroup = "identity-audit"

// throttleWindow is the login-failure window of every CRM_LOGIN_FAILURES_*
// count; a count never blocks longer than one window.
const throttleWindow = 15 * time.Minute

func main() {
	gogc.Default()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		slog.Error("identity stopped", "error", err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	c := defaults()
	if err := config.Parse(&c); err != nil {
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
		AccessTTL: c.AccessTTL, RefreshTTL: c.RefreshTTL, Limits: c.loginLimits(),
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
	parts := map[string]identity.PrivacyPart{}
	for name, url := range c.privacyURLs() {
		sc := svcclient.New(name, url, c.InternalSecret)
		sc.Timeout = c.PrivacyCallTimeout
		if parts[name], err = privacyapi.NewClient(sc); err != nil {
			return err
		}
	}
	privacy, err := identity.NewPrivacy(st, parts, c.privacy(), log)
	if err != nil {
		return err
	}
	handlers, err := api.New(svc, verifier, c.InternalSecret, c.proxies)
	if err != nil {
		return err
	}
	handlers.WithPrivacy(privacy)
	stop := platform.Background(ctx,
		(&outbox.Relay{DB: d, Redis: rdb, Log: log}).Run,
		func(ctx context.Context) { purgeLoop(ctx, st, log) },
		func(ctx context.Context) { publishAccessLoop(ctx, st, rdb, log) },
		// A person's exports and erasures, across the contexts.
		privacy.Run,
		// The other contexts' audit entries, appended once each.
		(&outbox.Consumer{Redis: rdb, Stream: identityapi.AuditStream, Group: auditGroup, Name: outbox.ConsumerName(),
			HandleBatch: svc.AppendAudit, Log: log}).Run,
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
