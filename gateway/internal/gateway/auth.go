package gateway

import (
	"context"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/problem"
)

// accessToken authenticates an integration token: identity verifies it
// (cached), the route's scope is checked, the token's service user is rate
// limited like any user, and the request goes on with the access token
// identity minted for that user in place of the secret, so services verify
// the caller exactly as they verify a person's token.
func (g *Gateway) accessToken(c *fiber.Ctx, st *reqState, rt *route.Route, tok string) error {
	ctx := c.UserContext()
	grant, err := g.tokens.Verify(ctx, tok)
	if err != nil {
		return err
	}
	if scope := rt.Scope(); scope != "" && !auth.GrantsScope(grant.Scopes, scope) {
		return insufficientScope(scope)
	}
	if rt.Auth == route.Admin && rt.Resource == "" && grant.Role != auth.RoleAdmin {
		return problem.Forbidden("this action requires the admin role")
	}
	if err := g.rateLimit(ctx, st, g.userLimit(strconv.FormatInt(grant.UserID, 10))); err != nil {
		return err
	}
	c.Request().Header.Set(fiber.HeaderAuthorization, "Bearer "+grant.AccessToken)
	return nil
}

// rateLimit counts the request against checks (Limiter.Allow) and keeps
// the tightest quota for the RateLimit-* headers.
func (g *Gateway) rateLimit(ctx context.Context, st *reqState, checks ...Check) error {
	for _, q := range g.limiter.Allow(ctx, checks...) {
		if st.quota == nil || q.Limited || (!st.quota.Limited && q.Remaining < st.quota.Remaining) {
			st.quota = &q
		}
		if q.Limited {
			return problem.RateLimited(q.Reset)
		}
	}
	return nil
}

// ipLimit is the client address's limit, counted for every API request.
func (g *Gateway) ipLimit(st *reqState) Check {
	return Check{Kind: "ip", Key: st.clientIP.String(), Limit: g.cfg.IPPerMinute}
}

// userLimit is the limit of the user (a person, or an integration token's
// service user) the request authenticated as.
func (g *Gateway) userLimit(subject string) Check {
	return Check{Kind: "user", Key: subject, Limit: g.cfg.UserPerMinute}
}

// bearerJWT verifies the request's bearer JWT (admin: it must carry the
// admin role) and counts the request against the client IP's and the
// user's limits in one Redis round trip. When verification fails the IP's
// limit alone is counted, and its 429 comes before the 401 or 403, as it
// did when the IP was counted before the token was looked at: a client
// sending bad tokens is refused once over its limit all the same.
func (g *Gateway) bearerJWT(ctx context.Context, st *reqState, tok string, admin bool) error {
	ip := g.ipLimit(st)
	claims, err := g.verifyJWT(ctx, tok, admin)
	if err != nil {
		if limited := g.rateLimit(ctx, st, ip); limited != nil {
			return limited
		}
		return err
	}
	return g.rateLimit(ctx, st, ip, g.userLimit(claims.Subject))
}

// verifyJWT verifies a bearer JWT ("": none was sent).
func (g *Gateway) verifyJWT(ctx context.Context, tok string, admin bool) (*auth.Claims, error) {
	if tok == "" {
		return nil, problem.Unauthenticated("missing bearer token")
	}
	claims, err := g.verifier.Verify(ctx, tok)
	if err != nil {
		return nil, err
	}
	if admin && !claims.IsAdmin() {
		return nil, problem.Forbidden("this action requires the admin role")
	}
	return claims, nil
}
