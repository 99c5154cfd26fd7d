package gateway

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io/fs"
	"path"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/opencrm/crm/pkg/contract/intakeapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// docsAssets are served under /docs/assets: the Redoc bundle (from npm,
// pinned in .ci/package.json; .ci/update-redoc copies it here) and the
// pages' stylesheet. Nothing of /docs is loaded from elsewhere.
//
//go:embed docsassets
var docsAssets embed.FS

// docsCSP allows the documentation pages only their own origin. Redoc
// adds <style> elements at run time; /docs admits those by a nonce of the
// request (docsPageCSP), read by the bundle from <meta name="csp-nonce">.
// Its search worker starts from a blob: URL of the page.
const docsCSP = "default-src 'self'; img-src 'self' data:; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// docsPageCSP is docsCSP with the request's style nonce.
func docsPageCSP(nonce string) string {
	return strings.Replace(docsCSP, "img-src", "style-src 'self' 'nonce-"+nonce+"'; img-src", 1)
}

// docsPage is Redoc reading the served document; no inline script or
// style. %s is the nonce.
const docsPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="csp-nonce" content="%s">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>OpenCRM API reference</title>
<link rel="stylesheet" href="/docs/assets/docs.css">
<link rel="icon" href="/docs/assets/logo-mini.svg">
</head><body>
<redoc spec-url="/openapi.json" hide-hostname="true" sort-required-props-first="true" path-in-middle-panel="true"></redoc>
<script src="/docs/assets/redoc.standalone.js"></script>
</body></html>
`

// Problem explains one problem code; its type URI is
// /docs/problems#<code> (see pkg/problem).
type Problem struct {
	Code    string
	Status  string
	Title   string
	Explain string
}

// Problems is every code the API answers in a problem+json body.
var Problems = []Problem{
	{"bad_request", "400", "Bad request", "The request is malformed other than its JSON: an unparsable query value, a header that cannot be forwarded, a multipart body without the expected file field. Fix the request; retrying it unchanged fails again."},
	{"malformed_json", "400", "Malformed JSON", "The body is not valid JSON, holds a value of the wrong JSON type, or has trailing data. The detail names the field when one can be named."},
	{"unauthenticated", "401", "Not authenticated", "The credential is missing, malformed, expired or revoked: a bearer access token on most routes, an API key (X-API-Key) on /api/public. WWW-Authenticate tells which. Log in again or refresh the token."},
	{"forbidden", "403", "Forbidden", "The credential is valid but does not allow this: the route needs the admin role, the record belongs to another user, or an API key does not allow the browser origin."},
	{"insufficient_scope", "403", "Insufficient scope", "The integration token is valid but does not hold the scope the operation needs; WWW-Authenticate names it (RFC 6750), and the API reference lists each operation's scope. Create a token with that scope."},
	{"not_found", "404", "Not found", "No record has this id, or the path does not exist. A record the caller may not see is also not found."},
	{"method_not_allowed", "405", "Method not allowed", "The path exists but not with this method; Allow lists the methods it takes."},
	{"request_timeout", "408", "Request timeout", "The request body did not arrive in time; the connection is closed."},
	{"conflict", "409", "Conflict", "The request conflicts with the current state: a duplicate unique value (a user's email, a team name), a signed copy that already exists, a record in use."},
	{"invalid_transition", "409", "Invalid status transition", "The record's status cannot change to the one asked for (for example a contract from terminated back to draft)."},
	{"already_qualified", "409", "Lead already qualified", "The lead was qualified before; the body carries contact_id, company_id and deal_id of the records it became."},
	{"qualification_in_progress", "409", "Qualification in progress", "Another request is qualifying the same lead; retry shortly to read its outcome."},
	{"qualification_pending", "409", "Interrupted qualification pending", "An interrupted qualification of this lead with other parameters already created records; pending carries its parameters: retry with them to finish it."},
	{"stage_in_use", "409", "Deal stage in use", "Deals are in this stage; move them before deleting it or changing its outcome."},
	{"template_in_use", "409", "Template in use", "Contracts were generated from this template, so it cannot be deleted."},
	{"idempotency_key_reused", "409", "Idempotency key reused", "The Idempotency-Key was used before with a different body. Use a new key for a new request."},
	{"request_in_progress", "409", "Request in progress", "A request with the same Idempotency-Key is still being processed; retry after a moment to get its answer."},
	{"payload_too_large", "413", "Payload too large", "The body exceeds the route's limit: 1 MiB of JSON, 64 KiB on " + route.Prefix + intakeapi.SubmitLead.Path + ", 20 MiB for a CSV import, 25 MiB for a signed copy."},
	{"unsupported_media_type", "415", "Unsupported media type", "The Content-Type is not the one the route takes (application/json, or multipart/form-data for uploads), or the body has a Content-Encoding other than identity."},
	{"validation_failed", "422", "Validation failed", "One or more fields are invalid; errors lists each as {field, message}, all at once. The OpenAPI document gives every field's limits."},
	{"document_too_long", "422", "Document too long", "A PDF (a contract or the merge-tag catalogue) has more pages than can be rendered, or a layout too heavy to render in time. Retrying cannot help; shorten or simplify the content."},
	{"rate_limited", "429", "Too many requests", "The caller's quota is used up (per user, per client IP, or per API key). Wait the seconds of Retry-After; RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset describe the window."},
	{"request_header_fields_too_large", "431", "Request header fields too large", "The request line (the query included) and the header fields together exceed the gateway's limit, whichever part is long. Send a shorter query, fewer or shorter headers; no valid credential is that large."},
	{"internal", "500", "Internal error", "A fault of the server. It is logged with the request id (request_id in the body, X-Request-Id header); report that id."},
	{"upstream_unavailable", "502, 503", "Service unavailable", "The service behind the route could not be reached or is not ready. Retry after Retry-After seconds when it is given."},
	{"upstream_timeout", "504", "Service timeout", "The service behind the route did not answer in time. A write may or may not have happened: read before retrying, or retry with an Idempotency-Key where the route takes one."},
}

var problemsTemplate = template.Must(template.New("problems").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>OpenCRM API problem types</title>
<link rel="stylesheet" href="/docs/assets/docs.css">
<link rel="icon" href="/docs/assets/logo-mini.svg">
</head><body><main class="problems">
<h1>Problem types</h1>
<p>Every error of the API is an <code>application/problem+json</code> body (RFC 9457):
<code>{"type", "title", "status", "detail", "code", "request_id", "errors"}</code>.
Its <code>type</code> links to the section below named by its <code>code</code>, which is stable; match on
<code>code</code>, not on <code>title</code> or <code>detail</code>. The <a href="/docs">API reference</a>
lists which codes each operation answers.</p>
{{range .}}<section id="{{.Code}}"><h2><code>{{.Code}}</code> <span class="status">{{.Status}} · {{.Title}}</span></h2>
<p>{{.Explain}}</p></section>
{{end}}</main></body></html>
`))

// renderProblems renders /docs/problems.
func renderProblems() ([]byte, error) {
	var buf bytes.Buffer
	if err := problemsTemplate.Execute(&buf, Problems); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// docsRoutes serves /docs, /docs/problems and /docs/assets/*.
func docsRoutes(app *fiber.App) error {
	problems, err := renderProblems()
	if err != nil {
		return err
	}
	assets, err := fs.Sub(docsAssets, "docsassets")
	if err != nil {
		return err
	}
	html := func(body []byte) fiber.Handler {
		return func(c *fiber.Ctx) error {
			c.Set(fiber.HeaderContentType, "text/html; charset=utf-8")
			c.Set("Content-Security-Policy", docsCSP)
			return c.Send(body)
		}
	}
	app.Get("/docs", func(c *fiber.Ctx) error {
		var b [18]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		nonce := base64.StdEncoding.EncodeToString(b[:])
		c.Set(fiber.HeaderContentType, "text/html; charset=utf-8")
		c.Set("Content-Security-Policy", docsPageCSP(nonce))
		c.Set(fiber.HeaderCacheControl, "no-store")
		return c.SendString(fmt.Sprintf(docsPage, nonce))
	})
	app.Get("/docs/problems", html(problems))
	app.Get("/docs/assets/:name", func(c *fiber.Ctx) error {
		name := c.Params("name")
		b, err := fs.ReadFile(assets, name)
		if err != nil || strings.Contains(name, "/") {
			return fiber.ErrNotFound
		}
		types := map[string]string{".svg": "image/svg+xml", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".txt": "text/plain; charset=utf-8"}
		c.Set(fiber.HeaderContentType, types[path.Ext(name)])
		c.Set("Content-Security-Policy", docsCSP)
		c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
		return c.Send(b)
	})
	return nil
}
