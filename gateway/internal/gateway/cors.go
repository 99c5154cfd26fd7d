package gateway

import (
	"strings"

	"github.com/gofiber/fiber/v2"
)

// cors applies CORS to the public API and answers preflights; it reports
// whether the request was a preflight (then fully answered).
func (g *Gateway) cors(c *fiber.Ctx) bool {
	origin := c.Get(fiber.HeaderOrigin)
	allow := g.allowedOrigin(origin)
	c.Vary(fiber.HeaderOrigin)
	if allow != "" {
		c.Set(fiber.HeaderAccessControlAllowOrigin, allow)
		c.Set(fiber.HeaderAccessControlExposeHeaders, "X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset")
	}
	if c.Method() != fiber.MethodOptions || c.Get(fiber.HeaderAccessControlRequestMethod) == "" {
		return false
	}
	if allow != "" {
		c.Set(fiber.HeaderAccessControlAllowMethods, "POST, OPTIONS")
		c.Set(fiber.HeaderAccessControlAllowHeaders, "Content-Type, X-API-Key, Idempotency-Key, X-Request-Id")
		c.Set(fiber.HeaderAccessControlMaxAge, "600")
	}
	c.Status(fiber.StatusNoContent)
	return true
}
func (g *Gateway) allowedOrigin(origin string) string {
	if origin == "" {
		return ""
	}
	for _, o := range g.cfg.CORSOrigins {
		if o == "*" {
			return "*"
		}
		if strings.EqualFold(o, origin) {
			return origin
		}
	}
	return ""
}
