package gateway

import (
	"context"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/problem"
)

// accessToken authenticates an integration token: identity verifies it
// (cached), the route's scope is checked, the token's service user is rate
// limited like any user, and the request goes on with the access token
// identity minted for that user in place of the secret, so services verify
// the caller exactly as they verify a person's token.
func (g *Gateway) accessToken(c *fiber.Ctx, st *reqState, rt *Route, tok string) error {
	ctx := c.UserContext()
	grant, err := g.tokens.Verify(ctx, tok)
	if err != nil {
		return err
	}
	if scope := rt.Scope(c.Method()); scope != "" && !auth.GrantsScope(grant.Scopes, scope) {
		return insufficientScope(scope)
	}
	if rt.Policy == Admin && rt.Resource == "" && grant.Role != auth.RoleAdmin {
		return problem.Forbidden("this action requires the admin role")
	}
	if err := g.rateLimit(ctx, st, "user", strconv.FormatInt(grant.UserID, 10), g.cfg.UserPerMinute); err != nil {
		return err
	}
	c.Request().Header.Set(fiber.HeaderAuthorization, "Bearer "+grant.AccessToken)
	return nil
}

// rateLimit counts the request against one limit and keeps the tightest
// quota for the RateLimit-* headers.
func (g *Gateway) rateLimit(ctx context.Context, st *reqState, kind, key string, limit int) error {
	q, ok := g.limiter.Allow(ctx, kind, key, limit)
	if !ok {
		return nil
	}
	if st.quota == nil || q.Limited || (!st.quota.Limited && q.Remaining < st.quota.Remaining) {
		st.quota = &q
	}
	if q.Limited {
		return problem.RateLimited(q.Reset)
	}
	return nil
}
