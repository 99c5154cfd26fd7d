package gateway

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
)

// ready answers 200 once the gateway has signing keys: with them it
// serves every route even while identity is away (cached keys keep
// verifying: "Authentication is unaffected") or Redis is (rate
// limits fail open). Before identity's JWKS has answered once, a token
// cannot be checked, so it is 503. Redis and the freshness of the keys
// ("stale": identity did not answer the latest fetch) are reported in the
// body and the gateway_dependency_up gauge without failing readiness; once
// Serve is stopping it is 503 whatever the checks.
func (g *Gateway) ready(c *fiber.Ctx) error {
	status, body := g.readiness(c.UserContext())
	return c.Status(status).JSON(body)
}

// readiness runs the checks of /readyz (public and ops listeners alike).
func (g *Gateway) readiness(ctx context.Context) (int, map[string]any) {
	if g.draining.Load() {
		return fiber.StatusServiceUnavailable, map[string]any{"status": "shutting_down"}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	checks := map[string]string{}
	ok := true
	up := func(dep string, v bool) {
		n := 0.0
		if v {
			n = 1
		}
		g.metrics.dependency.WithLabelValues(dep).Set(n)
	}
	if err := g.jwks.Ready(ctx); err != nil {
		ok, checks["jwks"] = false, "unavailable"
		up("jwks", false)
		g.log.WarnContext(ctx, "readiness check failed", "check", "jwks", "error", err.Error())
	} else if _, lastErr := g.jwks.State(); lastErr != nil {
		checks["jwks"] = "stale"
		up("jwks", false)
		g.log.WarnContext(ctx, "identity's JWKS did not answer the latest fetch; verifying with the cached keys",
			"check", "jwks", "error", lastErr.Error())
	} else {
		checks["jwks"] = "ok"
		up("jwks", true)
	}
	if err := g.rdb.Ping(ctx).Err(); err != nil {
		checks["redis"] = "unavailable"
		up("redis", false)
		g.log.WarnContext(ctx, "redis is unavailable: rate limits fail open", "check", "redis", "error", err.Error())
	} else {
		checks["redis"] = "ok"
		up("redis", true)
	}
	if !ok {
		return fiber.StatusServiceUnavailable, map[string]any{"status": "unavailable", "checks": checks}
	}
	return fiber.StatusOK, map[string]any{"status": "ok", "checks": checks}
}
