package gateway

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
)

// api routes /api/... through the table: CORS, body checks, rate limits,
// authentication, then the proxy.
func (g *Gateway) api(c *fiber.Ctx) error {
	st := state(c)
	full := string(c.Context().URI().Path()) // decoded and normalised: no "..", no "//"
	if !strings.HasPrefix(full, route.Prefix+"/") {
		return problem.NotFound("route")
	}
	if !Canonical(string(c.Request().URI().PathOriginal())) {
		p := *problem.NotFound("route")
		p.Detail = "no route has this path: it is not in canonical form (an empty, '.' or '..' segment, or an encoded '/' or '\\')"
		return &p
	}
	path := strings.TrimPrefix(full, route.Prefix)
	if isQueuesPath(path) {
		remote, _ := netip.AddrFromSlice(c.Context().RemoteIP())
		st.clientIP = clientIP(remote, forwardedFor(&c.Request().Header), g.cfg.TrustedProxies)
		return g.queues(c, st)
	}
	rt, allow := g.table.match(c.Method(), path)
	if rt == nil {
		if allow == "" {
			return problem.NotFound("route")
		}
		// A method the path does not take: authenticated as the service's
		// answer was, then answered here, as the service would.
		rt, st.allow = g.table.guardOf(path, allow), allow
	} else {
		st.deprecated = rt.Deprecated
	}
	st.route = rt.Path
	ctx := c.UserContext()

	if rt.Auth == route.Key && g.cors(c) {
		return nil // preflight answered
	}
	if err := checkBody(c, rt); err != nil {
		return err
	}

	remote, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	xff := forwardedFor(&c.Request().Header)
	st.clientIP = clientIP(remote, xff, g.cfg.TrustedProxies)
	st.forwardedFor = remote.Unmap().String()
	if xff != "" && isTrusted(remote.Unmap(), g.cfg.TrustedProxies) {
		st.forwardedFor = xff + ", " + st.forwardedFor
	}

	tok, _ := auth.BearerToken(c.Get(fiber.HeaderAuthorization))
	if (rt.Auth == route.JWT || rt.Auth == route.Admin) && !isAccessToken(tok) {
		if err := g.bearerJWT(ctx, st, tok, rt.Auth == route.Admin); err != nil {
			return err
		}
		return g.forward(c, rt, path, st)
	}
	// Any other request counts its IP first, on its own: an integration
	// token or an API key unknown to the cache is looked up at identity,
	// which a client over its IP's limit must not reach.
	if err := g.rateLimit(ctx, st, g.ipLimit(st)); err != nil {
		return err
	}
	switch rt.Auth {
	case route.JWT, route.Admin:
		if err := g.accessToken(c, st, rt, tok); err != nil {
			return err
		}
	case route.Key:
		if len(c.Request().Header.Peek(fiber.HeaderAuthorization)) > 0 {
			return keyProblem("bearer tokens are not accepted on the public API: send the API key in X-API-Key")
		}
		if err := g.verifyKey(ctx, c.Get("X-API-Key")); err != nil {
			return err
		}
	}
	return g.forward(c, rt, path, st)
}

// forward proxies an authenticated request, or answers 405 for a method
// its path does not take.
func (g *Gateway) forward(c *fiber.Ctx, rt *route.Route, path string, st *reqState) error {
	if st.allow != "" {
		return httpx.NotAllowed(st.allow)
	}
	return g.proxy(c, rt, path, st)
}

// forwardedFor is every X-Forwarded-For line as one list: a proxy may add
// its own line rather than append to the client's (HAProxy's option
// forwardfor does), and RFC 9110 section 5.3 makes the lines one
// comma-separated value. Peek would return the first line only, the
// client's.
func forwardedFor(h *fasthttp.RequestHeader) string {
	lines := h.PeekAll(fiber.HeaderXForwardedFor)
	if len(lines) == 1 {
		return string(lines[0])
	}
	parts := make([]string, 0, len(lines))
	for _, l := range lines {
		if l := strings.TrimSpace(string(l)); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, ", ")
}

// checkBody refuses compressed bodies (never inflated here, so a gzip bomb
// costs nothing) and bodies whose declared length is over the route limit,
// before a byte of the body is read. Chunked bodies are capped as they
// stream (requestBody).
func checkBody(c *fiber.Ctx, rt *route.Route) error {
	if ce := strings.TrimSpace(c.Get(fiber.HeaderContentEncoding)); ce != "" && !strings.EqualFold(ce, "identity") {
		return problem.UnsupportedMediaType("compressed request bodies are not accepted (Content-Encoding must be identity)")
	}
	if cl := int64(c.Request().Header.ContentLength()); cl > rt.Limit() {
		return problem.TooLarge(fmt.Sprintf("the request body exceeds %d bytes", rt.Limit()))
	}
	return nil
}
