package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/authtest"
	"github.com/opencrm/crm/pkg/buildinfo"
	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/problem"
)

func TestUserRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.UserPerMinute = 3 })
	user := e.iss.User(t, 41)
	for i := 1; i <= 3; i++ {
		r := e.do(req{path: "/api/contacts", token: user})
		echoed(t, r)
		if got, want := r.header.Get("RateLimit-Remaining"), strconv.Itoa(3-i); got != want {
			t.Errorf("request %d: RateLimit-Remaining = %q, want %q", i, got, want)
		}
	}
	r := e.do(req{path: "/api/contacts", token: user})
	wantProblem(t, r, http.StatusTooManyRequests, "rate_limited")
	wantLimitHeaders(t, r, "3")
	// Another user has their own budget.
	echoed(t, e.do(req{path: "/api/contacts", token: e.iss.User(t, 42)}))
}

func TestIPRateLimitComesBeforeAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.IPPerMinute = 2; c.UserPerMinute = 0 })
	ip := map[string]string{"X-Forwarded-For": "198.51.100.23"}
	wantProblem(t, e.do(req{path: "/api/contacts", header: ip}), http.StatusUnauthorized, "unauthenticated")
	wantProblem(t, e.do(req{path: "/api/contacts", header: ip}), http.StatusUnauthorized, "unauthenticated")
	r := e.do(req{path: "/api/contacts", header: ip, token: e.iss.User(t, 7)})
	wantProblem(t, r, http.StatusTooManyRequests, "rate_limited")
	wantLimitHeaders(t, r, "2")
	// Over the limit, a bad token and a missing admin role are refused as
	// rate limited too, not checked.
	for _, r := range []response{
		e.do(req{path: "/api/contacts", header: ip, token: "not-a-token"}),
		e.do(req{path: "/api/users", header: ip, token: e.iss.User(t, 7)}),
	} {
		wantProblem(t, r, http.StatusTooManyRequests, "rate_limited")
		wantLimitHeaders(t, r, "2")
	}
	// Another client address is not limited.
	echoed(t, e.do(req{path: "/api/contacts", token: e.iss.User(t, 7), header: map[string]string{"X-Forwarded-For": "198.51.100.24"}}))
}

// TestIPAndUserLimitsTogether: the IP's and the user's limits are counted
// together; a request the IP's limit refuses is not counted against the
// user, and the tighter quota is the one reported.
func TestIPAndUserLimitsTogether(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.IPPerMinute = 2; c.UserPerMinute = 3 })
	user := e.iss.User(t, 43)
	from := func(addr string) map[string]string { return map[string]string{"X-Forwarded-For": addr} }
	for i, want := range []string{"1", "0"} { // the IP's quota is the tighter one
		r := e.do(req{path: "/api/contacts", token: user, header: from("198.51.100.31")})
		echoed(t, r)
		if got := r.header.Get("RateLimit-Remaining"); got != want {
			t.Errorf("request %d: RateLimit-Remaining = %q, want %q", i+1, got, want)
		}
	}
	r := e.do(req{path: "/api/contacts", token: user, header: from("198.51.100.31")})
	wantProblem(t, r, http.StatusTooManyRequests, "rate_limited")
	wantLimitHeaders(t, r, "2")
	// The user has one request left: the refused one was not counted.
	r = e.do(req{path: "/api/contacts", token: user, header: from("198.51.100.32")})
	echoed(t, r)
	if got := r.header.Get("RateLimit-Remaining"); got != "0" {
		t.Errorf("user's last request: RateLimit-Remaining = %q, want 0", got)
	}
	r = e.do(req{path: "/api/contacts", token: user, header: from("198.51.100.32")})
	wantProblem(t, r, http.StatusTooManyRequests, "rate_limited")
	wantLimitHeaders(t, r, "3")
}

func wantLimitHeaders(t *testing.T, r response, limit string) {
	t.Helper()
	ra, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 60 {
		t.Errorf("Retry-After = %q", r.header.Get("Retry-After"))
	}
	if got := r.header.Get("RateLimit-Limit"); got != limit {
		t.Errorf("RateLimit-Limit = %q, want %s", got, limit)
	}
	if got := r.header.Get("RateLimit-Remaining"); got != "0" {
		t.Errorf("RateLimit-Remaining = %q, want 0", got)
	}
	if reset, err := strconv.Atoi(r.header.Get("RateLimit-Reset")); err != nil || reset < 1 || reset > 60 {
		t.Errorf("RateLimit-Reset = %q", r.header.Get("RateLimit-Reset"))
	}
}

func TestRateLimitsOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.IPPerMinute = 0; c.UserPerMinute = 0 })
	r := e.do(req{path: "/api/contacts", token: e.iss.User(t, 7)})
	echoed(t, r)
	if got := r.header.Get("RateLimit-Limit"); got != "" {
		t.Errorf("RateLimit-Limit = %q with limits off", got)
	}
}

func TestRedisDownFailsOpenButAuthHolds(t *testing.T) {
	t.Parallel()
	redisDown := strings.Replace(closedURL(t), "http://", "redis://", 1)
	e := newEnv(t, func(c *Config) { c.RedisURL = config.URL(redisDown); c.UserPerMinute = 1; c.IPPerMinute = 1 })
	user := e.iss.User(t, 7)
	for range 3 {
		echoed(t, e.do(req{path: "/api/contacts", token: user}))
	}
	wantProblem(t, e.do(req{path: "/api/contacts"}), http.StatusUnauthorized, "unauthenticated")
	wantProblem(t, e.do(req{path: "/api/users", token: user}), http.StatusForbidden, "forbidden")
	// Ready: the gateway serves without Redis; Redis is reported only.
	wantReadyz(t, e.do(req{path: "/readyz"}), http.StatusOK,
		map[string]any{"status": "ok", "checks": map[string]any{"jwks": "ok", "redis": "unavailable"}})
	wantMetrics(t, e.ops("/metrics"), `gateway_dependency_up{dependency="redis"} 0`, `gateway_dependency_up{dependency="jwks"} 1`)
}

// wantReadyz asserts the status and the whole /readyz body.
func wantReadyz(t *testing.T, r response, status int, body map[string]any) {
	t.Helper()
	if r.status != status {
		t.Errorf("readyz status = %d, want %d; body %s", r.status, status, r.body)
	}
	var got map[string]any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatalf("readyz body %q: %v", r.body, err)
	}
	if d := cmp.Diff(body, got); d != "" {
		t.Errorf("readyz body (-want +got):\n%s", d)
	}
}

func wantMetrics(t *testing.T, r response, lines ...string) {
	t.Helper()
	for _, want := range lines {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.HSTSMaxAge = 31536000 })
	want := map[string]string{
		"X-Content-Type-Options":    "nosniff",
		"X-Frame-Options":           "DENY",
		"Referrer-Policy":           "no-referrer",
		"Content-Security-Policy":   "default-src 'none'; frame-ancestors 'none'",
		"Strict-Transport-Security": "max-age=31536000; includeSubDomains",
	}
	for _, r := range []struct {
		name string
		req  req
	}{
		{"proxied", req{path: "/api/contacts", token: e.iss.User(t, 7)}},
		{"401", req{path: "/api/contacts"}},
		{"404", req{path: "/nowhere"}},
		{"healthz", req{path: "/healthz"}},
		{"openapi", req{path: "/openapi.json"}},
	} {
		t.Run(r.name, func(t *testing.T) {
			resp := e.do(r.req)
			got := map[string]string{}
			for k := range want {
				got[k] = strings.Join(resp.header.Values(k), " | ")
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("headers (-want +got):\n%s", d)
			}
		})
	}
	plain := newEnv(t, nil)
	if got := plain.do(req{path: "/healthz"}).header.Get("Strict-Transport-Security"); got != "" {
		t.Errorf("HSTS = %q with CRM_HSTS_MAX_AGE unset", got)
	}
}

func TestCORSOnlyOnPublicAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.CORSOrigins = []string{"https://forms.example.com"} })
	pre := func(path, origin string) response {
		return e.do(req{method: "OPTIONS", path: path, header: map[string]string{
			"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-api-key, content-type"}})
	}
	r := pre("/api/public/leads", "https://forms.example.com")
	if r.status != http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != "https://forms.example.com" ||
		!strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "X-API-Key") {
		t.Errorf("allowed preflight: %d %v", r.status, r.header)
	}
	r = pre("/api/public/leads", "https://evil.example")
	if r.status != http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("refused preflight: %d %v", r.status, r.header)
	}
	r = pre("/api/contacts", "https://forms.example.com")
	if r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS on a JWT route: %v", r.header)
	}
	wantProblem(t, r, http.StatusUnauthorized, "unauthenticated")
	// An actual request carries the header, even when refused, so the
	// browser can read the problem.
	r = e.do(req{method: "POST", path: "/api/public/leads", header: map[string]string{"Origin": "https://forms.example.com"}, body: strings.NewReader(`{}`)})
	wantProblem(t, r, http.StatusUnauthorized, "unauthenticated")
	if r.header.Get("Access-Control-Allow-Origin") != "https://forms.example.com" {
		t.Errorf("ACAO = %q", r.header.Get("Access-Control-Allow-Origin"))
	}
	if n := e.ups[SvcIntake].calls(); n != 0 {
		t.Errorf("intake received %d calls", n)
	}
}

func TestOpsEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	if r := e.do(req{path: "/healthz"}); r.status != http.StatusOK {
		t.Errorf("healthz = %d", r.status)
	}
	wantReadyz(t, e.do(req{path: "/readyz"}), http.StatusOK,
		map[string]any{"status": "ok", "checks": map[string]any{"jwks": "ok", "redis": "ok"}})
	echoed(t, e.do(req{path: "/api/contacts/1", token: e.iss.User(t, 7)}))
	// A path nothing declares is answered here, as the service would, and
	// counted as unmatched.
	wantProblem(t, e.do(req{path: "/api/contacts/1/undocumented", token: e.iss.User(t, 7)}), http.StatusNotFound, "not_found")
	wantMetrics(t, e.ops("/metrics"),
		`gateway_requests_total{method="GET",route="/contacts/{id}",status="200"} 1`,
		`gateway_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`gateway_upstream_duration_seconds_count{service="contacts",status="2xx"} 1`,
		`gateway_dependency_up{dependency="jwks"} 1`,
		`gateway_dependency_up{dependency="redis"} 1`,
		`crm_build_info{version="`+buildinfo.Version()+`"} 1`,
		`go_goroutines`,
	)
	// The ops listener answers the probes too; the public port serves no
	// metrics.
	if r := e.ops("/healthz"); r.status != http.StatusOK {
		t.Errorf("ops healthz = %d", r.status)
	}
	wantReadyz(t, e.ops("/readyz"), http.StatusOK,
		map[string]any{"status": "ok", "checks": map[string]any{"jwks": "ok", "redis": "ok"}})
	if r := e.do(req{path: "/metrics"}); r.status != http.StatusNotFound {
		t.Errorf("public /metrics = %d, want 404", r.status)
	}
}

// TestReadyzNeedsJWKS: until identity's JWKS has answered once the gateway
// cannot check a token, so it is not ready.
func TestReadyzNeedsJWKS(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.JWKSURL = closedURL(t) + "/auth/jwks" })
	wantReadyz(t, e.do(req{path: "/readyz"}), http.StatusServiceUnavailable,
		map[string]any{"status": "unavailable", "checks": map[string]any{"jwks": "unavailable", "redis": "ok"}})
	wantMetrics(t, e.ops("/metrics"), `gateway_dependency_up{dependency="jwks"} 0`)
	// Without keys, a token cannot be checked: 503, not 401.
	wantProblem(t, e.do(req{path: "/api/contacts", token: e.iss.User(t, 7)}), http.StatusServiceUnavailable, "upstream_unavailable")
}

// TestReadyzOnCachedKeysWhileIdentityIsDown: once keys were fetched the
// gateway stays ready while identity is unreachable (the cached keys keep
// verifying), reporting the keys as stale.
func TestReadyzOnCachedKeysWhileIdentityIsDown(t *testing.T) {
	t.Parallel()
	var identity *httptest.Server // stands in front of the issuer's JWKS
	e := newEnv(t, func(c *Config) {
		published := c.JWKSURL
		identity = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			resp, err := http.Get(published)
			if err != nil {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			w.WriteHeader(resp.StatusCode)
			_, _ = io.Copy(w, resp.Body)
		}))
		t.Cleanup(identity.Close)
		c.JWKSURL = identity.URL
	})
	e.g.jwks.MinRefresh = 0 // every unknown kid asks identity
	wantReadyz(t, e.do(req{path: "/readyz"}), http.StatusOK,
		map[string]any{"status": "ok", "checks": map[string]any{"jwks": "ok", "redis": "ok"}})

	identity.Close()
	other := authtest.New(t)
	other.Kid = "unknown"
	wantProblem(t, e.do(req{path: "/api/contacts", token: other.User(t, 7)}), http.StatusUnauthorized, "unauthenticated")

	wantReadyz(t, e.do(req{path: "/readyz"}), http.StatusOK,
		map[string]any{"status": "ok", "checks": map[string]any{"jwks": "stale", "redis": "ok"}})
	wantMetrics(t, e.ops("/metrics"), `gateway_dependency_up{dependency="jwks"} 0`)
	echoed(t, e.do(req{path: "/api/contacts", token: e.iss.User(t, 7)}))
}

// TestOpenAPIServed checks the document the gateway serves: its header
// and one operation per declared route (no two declare one method+path).
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.do(req{path: "/openapi.json"})
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("openapi.json = %d %s", r.status, r.header.Get("Content-Type"))
	}
	var doc struct {
		OpenAPI    string                               `json:"openapi"`
		Paths      map[string]map[string]map[string]any `json:"paths"`
		Components struct {
			SecuritySchemes map[string]any `json:"securitySchemes"`
			Schemas         map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Components.SecuritySchemes["bearerAuth"] == nil ||
		doc.Components.SecuritySchemes["apiKey"] == nil || doc.Components.Schemas["Problem"] == nil {
		t.Fatalf("document header: %s %v", doc.OpenAPI, doc.Components.SecuritySchemes)
	}
	count := 0
	for _, item := range doc.Paths {
		count += len(item)
	}
	if count != len(Routes()) {
		t.Errorf("document has %d operations, Routes() %d (duplicate method+path?)", count, len(Routes()))
	}
}

func TestDocsPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.do(req{path: "/docs"})
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("docs = %d %s", r.status, r.header.Get("Content-Type"))
	}
	body := string(r.body)
	nonce := regexp.MustCompile(`<meta name="csp-nonce" content="([A-Za-z0-9+/]{24})">`).FindStringSubmatch(body)
	if nonce == nil {
		t.Fatalf("no csp-nonce meta element: %s", body)
	}
	if csp, want := r.header.Get("Content-Security-Policy"), docsPageCSP(nonce[1]); csp != want || !strings.HasPrefix(csp, "default-src 'self';") {
		t.Errorf("CSP %q, want %q", csp, want)
	}
	if again := e.do(req{path: "/docs"}); strings.Contains(string(again.body), nonce[1]) {
		t.Error("two pages share a nonce")
	}
	if strings.Contains(body, "http://") || strings.Contains(body, "https://") || strings.Contains(body, "<style") {
		t.Error("docs page loads external resources or inline style")
	}
	for _, want := range []string{`<script src="/docs/assets/redoc.standalone.js"></script>`, `spec-url="/openapi.json"`} {
		if !strings.Contains(body, want) {
			t.Errorf("docs lack %q", want)
		}
	}
	tests := []struct{ path, ctype string }{
		{"/docs/assets/redoc.standalone.js", "text/javascript; charset=utf-8"},
		{"/docs/assets/redoc.standalone.js.LICENSE.txt", "text/plain; charset=utf-8"},
		{"/docs/assets/docs.css", "text/css; charset=utf-8"},
		{"/docs/problems", "text/html; charset=utf-8"},
	}
	for _, tc := range tests {
		r := e.do(req{path: tc.path})
		if r.status != http.StatusOK || r.header.Get("Content-Type") != tc.ctype || len(r.body) == 0 {
			t.Errorf("GET %s = %d %q (%d bytes), want 200 %q", tc.path, r.status, r.header.Get("Content-Type"), len(r.body), tc.ctype)
		}
	}
	for _, p := range []string{"/docs/assets/nope.js", "/docs/assets/..%2fdocs.go"} {
		if r := e.do(req{path: p}); r.status != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", p, r.status)
		}
	}
}

// TestProblemPages checks that every problem type URI the API emits
// resolves to a section of /docs/problems, and that the OpenAPI document's
// problem responses name only codes explained there.
func TestProblemPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	page := string(e.do(req{path: "/docs/problems"}).body)
	codes := []string{"bad_request", "malformed_json", "unauthenticated", "forbidden", "not_found", "method_not_allowed",
		"request_timeout", "conflict", "invalid_transition", "already_qualified", "qualification_in_progress", "stage_in_use",
		"template_in_use", "idempotency_key_reused", "request_in_progress", "payload_too_large", "unsupported_media_type",
		"qualification_pending", "document_too_long", "request_header_fields_too_large",
		"validation_failed", "rate_limited", "internal", "upstream_unavailable", "upstream_timeout"}
	for _, code := range codes {
		uri := problem.TypeURI(code)
		frag := uri[strings.IndexByte(uri, '#')+1:]
		if !strings.HasPrefix(uri, "/docs/problems#") || !strings.Contains(page, `<section id="`+frag+`">`) {
			t.Errorf("problem type %s does not resolve to a section of /docs/problems", uri)
		}
	}
	for status, desc := range problemCodes {
		code, _, _ := strings.Cut(desc, ":")
		for _, c := range strings.FieldsFunc(code, func(r rune) bool { return r == ',' || r == ' ' }) {
			if strings.Contains(c, "_") && !strings.Contains(page, `id="`+c+`"`) {
				t.Errorf("response %s names %s, which /docs/problems does not explain", status, c)
			}
		}
	}
}

func TestClientIP(t *testing.T) {
	t.Parallel()
	trusted, err := parsePrefixes("127.0.0.0/8,::1/128,10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ remote, xff, want string }{
		{"203.0.113.5", "1.2.3.4", "203.0.113.5"},               // untrusted peer: header ignored
		{"127.0.0.1", "", "127.0.0.1"},                          // no header
		{"127.0.0.1", "198.51.100.7", "198.51.100.7"},           // one trusted hop
		{"127.0.0.1", "6.6.6.6, 198.51.100.7", "198.51.100.7"},  // spoofed leftmost entry is ignored
		{"127.0.0.1", "198.51.100.7, 10.1.2.3", "198.51.100.7"}, // trusted inner proxy skipped
		{"127.0.0.1", "garbage, 198.51.100.7", "198.51.100.7"},  // junk left of the client
		{"127.0.0.1", "198.51.100.7, garbage", "127.0.0.1"},     // junk from a trusted hop: stop
		{"::ffff:127.0.0.1", "2001:db8::1", "2001:db8::1"},      // IPv4-mapped peer
		{"127.0.0.1", "10.0.0.1, 10.0.0.2", "10.0.0.1"},         // all trusted: the leftmost
	}
	for _, tc := range tests {
		got := clientIP(netip.MustParseAddr(tc.remote), tc.xff, trusted)
		if got.String() != tc.want {
			t.Errorf("clientIP(%s, %q) = %s, want %s", tc.remote, tc.xff, got, tc.want)
		}
	}
}

func TestConfigFromEnvironment(t *testing.T) {
	t.Parallel()
	var cfg Config
	if err := config.ParseMap(&cfg, map[string]string{"CRM_INTERNAL_SECRET": testSecret}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		SvcIdentity: "http://localhost:8081", SvcContacts: "http://localhost:8082", SvcLeads: "http://localhost:8083",
		SvcDeals: "http://localhost:8084", SvcContracts: "http://localhost:8085", SvcIntake: "http://localhost:8086", SvcMail: "http://localhost:8087",
		SvcWebhooks: "http://localhost:8089",
	}
	if d := cmp.Diff(want, cfg.Services); d != "" {
		t.Errorf("services (-want +got):\n%s", d)
	}
	if cfg.Addr != ":8080" || cfg.UpstreamTimeout != 35*time.Second || cfg.UserPerMinute != 1200 || cfg.IPPerMinute != 6000 ||
		cfg.JWKSURL != "http://localhost:8081/auth/jwks" || cfg.APIKeyCacheTTL != 5*time.Second ||
		cfg.Shutdown.Delay != 5*time.Second || cfg.Shutdown.Drain != 40*time.Second {
		t.Errorf("defaults: %+v", cfg)
	}

	bad := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"secret missing", map[string]string{}, "CRM_INTERNAL_SECRET: is required"},
		{"secret short", map[string]string{"CRM_INTERNAL_SECRET": "short"}, "CRM_INTERNAL_SECRET: must be at least 16"},
		{"bad url", map[string]string{"CRM_INTERNAL_SECRET": testSecret, "LEADS_URL": "leads:8083"}, "LEADS_URL"},
		{"bad limit", map[string]string{"CRM_INTERNAL_SECRET": testSecret, "CRM_RATE_LIMIT_USER_PER_MINUTE": "-1"}, "CRM_RATE_LIMIT_USER_PER_MINUTE"},
		{"drain shorter than the upstream wait", map[string]string{"CRM_INTERNAL_SECRET": testSecret, "CRM_DRAIN_TIMEOUT": "10s"}, "CRM_DRAIN_TIMEOUT"},
		{"bad timeout", map[string]string{"CRM_INTERNAL_SECRET": testSecret, "CRM_UPSTREAM_TIMEOUT": "soon"}, "CRM_UPSTREAM_TIMEOUT"},
		{"zero timeout", map[string]string{"CRM_INTERNAL_SECRET": testSecret, "CRM_UPSTREAM_TIMEOUT": "0s"}, "CRM_UPSTREAM_TIMEOUT"},
		{"bad proxies", map[string]string{"CRM_INTERNAL_SECRET": testSecret, "CRM_TRUSTED_PROXIES": "10.0.0.0/99"}, "CRM_TRUSTED_PROXIES"},
		{"bad log level", map[string]string{"CRM_INTERNAL_SECRET": testSecret, "LOG_LEVEL": "loud"}, "LOG_LEVEL"},
		{"negative shutdown delay", map[string]string{"CRM_INTERNAL_SECRET": testSecret, "CRM_SHUTDOWN_DELAY": "-5s"}, "CRM_SHUTDOWN_DELAY"},
		{"zero drain timeout", map[string]string{"CRM_INTERNAL_SECRET": testSecret, "CRM_DRAIN_TIMEOUT": "0s"}, "CRM_DRAIN_TIMEOUT"},
	}
	for _, tc := range bad {
		var cfg Config
		err := config.ParseMap(&cfg, tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}
