package gateway

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"

	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/opencrm/crm/pkg/auth"
)

// QueuesPath is where the queues UI (asynqmon) lives under /api: admin
// only, served by the gateway itself from the queues' Redis.
const QueuesPath = "/admin/queues"

// queuesUI is asynqmon mounted at /api/admin/queues. Its UI, scripts and
// icons are embedded in its module; the only outside references of its
// page, two Google Fonts stylesheets, are removed, and the page's policy
// allows its own origin only, so nothing is loaded from the internet (the
// UI falls back to the browser's fonts; icons render as their names).
type queuesUI struct {
	mon     *asynqmon.HTTPHandler
	handler func(*fiber.Ctx)
}

func newQueuesUI(redisURL string) (*queuesUI, error) {
	opt, err := asynq.ParseRedisURI(redisURL)
	if err != nil {
		return nil, fmt.Errorf("queues UI: %w", err)
	}
	mon := asynqmon.New(asynqmon.Options{RootPath: route.Prefix + QueuesPath, RedisConnOpt: opt})
	h := fasthttpadaptor.NewFastHTTPHandler(http.Handler(mon))
	return &queuesUI{mon: mon, handler: func(c *fiber.Ctx) { h(c.Context()) }}, nil
}

func (q *queuesUI) Close() error { return q.mon.Close() }

// isQueuesPath reports /admin/queues and everything below it.
func isQueuesPath(path string) bool {
	return path == QueuesPath || strings.HasPrefix(path, QueuesPath+"/")
}

// queues authenticates an admin (bearer token with role admin, as every
// Admin route) and serves asynqmon.
func (g *Gateway) queues(c *fiber.Ctx, st *reqState) error {
	st.route = QueuesPath + "/*"
	ctx := c.UserContext()
	if err := checkBody(c, &route.Route{}); err != nil {
		return err
	}
	tok, _ := auth.BearerToken(c.Get(fiber.HeaderAuthorization))
	if err := g.bearerJWT(ctx, st, tok, true); err != nil {
		return err
	}
	g.queuesUI.handler(c)
	if strings.HasPrefix(string(c.Response().Header.ContentType()), "text/html") {
		body, csp := selfContained(c.Response().Body())
		c.Response().SetBodyRaw(body)
		c.Set("Content-Security-Policy", csp)
	}
	return nil
}

var (
	externalStylesheet = regexp.MustCompile(`<link rel="stylesheet" href="https?://[^"]*"/?>`)
	inlineScript       = regexp.MustCompile(`<script>(.*?)</script>`)
)

// selfContained strips the page's external stylesheets and returns it with
// a policy allowing this origin and the page's own inline scripts only
// (by hash). Styles may be inline: the UI's components inject theirs.
func selfContained(page []byte) ([]byte, string) {
	page = externalStylesheet.ReplaceAll(page, nil)
	scripts := []string{"'self'"}
	for _, m := range inlineScript.FindAllSubmatch(page, -1) {
		sum := sha256.Sum256(m[1])
		scripts = append(scripts, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	}
	return page, "default-src 'self'; script-src " + strings.Join(scripts, " ") +
		"; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self';" +
		" frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
}
