package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/authtest"
	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/identityapi/identityapitest"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/problem/problemtest"
)

const testSecret = "test-internal-secret-0123456789"

// seen is what a fake service received.
type seen struct {
	Service    string      `json:"service"`
	Method     string      `json:"method"`
	Path       string      `json:"path"`
	RawPath    string      `json:"raw_path"`
	Query      string      `json:"query"`
	Header     http.Header `json:"header"`
	BodyLen    int64       `json:"body_len"`
	BodySHA256 string      `json:"body_sha256"`
}

// upstream is a fake service that echoes what it received. Paths ending
// in /slow wait until the caller gives up; ?stream=N answers N bytes.
type upstream struct {
	name string
	srv  *httptest.Server
	mu   sync.Mutex
	got  []seen
}

func newUpstream(t testing.TB, name string, extra http.Handler) *upstream {
	t.Helper()
	u := &upstream{name: name}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if extra != nil && (r.URL.Path == identityapi.PathVerifyKey || r.URL.Path == identityapi.PathVerifyAccessToken ||
			strings.HasPrefix(r.URL.Path, identityapi.PathUsers)) {
			extra.ServeHTTP(w, r)
			return
		}
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		s := seen{Service: name, Method: r.Method, Path: r.URL.Path, RawPath: r.URL.EscapedPath(), Query: r.URL.RawQuery,
			Header: r.Header.Clone(), BodyLen: n, BodySHA256: hex.EncodeToString(h.Sum(nil))}
		u.mu.Lock()
		u.got = append(u.got, s)
		u.mu.Unlock()
		switch {
		case strings.HasSuffix(r.URL.Path, "/slow"):
			select {
			case <-r.Context().Done():
			case <-time.After(20 * time.Second):
			}
			return
		case r.URL.Query().Get("stream") != "":
			size, _ := strconv.Atoi(r.URL.Query().Get("stream"))
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Disposition", `attachment; filename="big.bin"`)
			chunk := make([]byte, 32<<10)
			for i := range chunk {
				chunk[i] = byte(i)
			}
			for size > 0 {
				m := min(size, len(chunk))
				if _, err := w.Write(chunk[:m]); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				size -= m
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Upstream", name)
		if r.URL.Query().Get("created") != "" {
			// A create: 201 with the new record's id, as services answer.
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"success":true,"data":{"id":88,"submission_id":301},"message":"Lead created"}`)
			return
		}
		w.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(w).Encode(s)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) calls() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.got)
}

// env is one running gateway with its fake services.
type env struct {
	t        testing.TB
	iss      *authtest.Issuer
	ups      map[string]*upstream
	identity *identityapitest.Fake
	// tokens answers identity's access-token verification when set.
	tokensMu sync.Mutex
	tokens   http.Handler
	g        *Gateway
	cfg      Config
	base     string
	opsBase  string
	client   *http.Client
	logs     *logBuffer
	// stop ends Serve (as SIGTERM does) and returns its result; the
	// cleanup calls it too, so a test may call it first.
	stop func() error
}

// logBuffer keeps the gateway's JSON log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// messages lists the messages logged at level (DEBUG, INFO, WARN, ERROR).
func (b *logBuffer) messages(t testing.TB, level string) []string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b.buf)), "\n") {
		if line == "" {
			continue
		}
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.Level == level {
			out = append(out, rec.Msg)
		}
	}
	return out
}

// newEnv starts a gateway; mutate adjusts the configuration first.
func newEnv(t testing.TB, mutate func(*Config)) *env {
	t.Helper()
	return newEnvRoutes(t, mutate, nil)
}

// newEnvRoutes starts a gateway serving routes instead of Routes() when
// routes is not nil (a synthetic table, as a deprecated route's).
func newEnvRoutes(t testing.TB, mutate func(*Config), routes []route.Route) *env {
	t.Helper()
	e := &env{t: t, iss: authtest.New(t), ups: map[string]*upstream{},
		identity: identityapitest.NewFake(testSecret)}
	vars := map[string]string{"CRM_INTERNAL_SECRET": testSecret, "REDIS_URL": "redis://127.0.0.1:6379/0"}
	for _, s := range []struct{ name, env string }{
		{SvcIdentity, "IDENTITY_URL"}, {SvcContacts, "CONTACTS_URL"}, {SvcLeads, "LEADS_URL"}, {SvcDeals, "DEALS_URL"},
		{SvcContracts, "CONTRACTS_URL"}, {SvcIntake, "INTAKE_URL"}, {SvcMail, "MAIL_URL"}, {SvcWebhooks, "WEBHOOKS_URL"},
	} {
		var extra http.Handler
		if s.name == SvcIdentity {
			extra = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				e.tokensMu.Lock()
				tokens := e.tokens
				e.tokensMu.Unlock()
				if r.URL.Path == identityapi.PathVerifyAccessToken && tokens != nil {
					tokens.ServeHTTP(w, r)
					return
				}
				e.identity.ServeHTTP(w, r)
			})
		}
		u := newUpstream(t, s.name, extra)
		e.ups[s.name] = u
		vars[s.env] = u.srv.URL
	}
	var cfg Config
	if err := config.ParseMap(&cfg, vars); err != nil {
		t.Fatal(err)
	}
	cfg.JWKSURL = e.iss.JWKSServer(t).URL
	cfg.RateLimitPrefix = "test:gateway:" + randHex(t) + ":"
	cfg.Shutdown.Delay = 0
	if mutate != nil {
		mutate(&cfg)
	}
	e.cfg = cfg
	e.logs = &logBuffer{}
	g, err := New(cfg, slog.New(slog.NewJSONHandler(e.logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if routes != nil {
		g.table = newTable(routes)
	}
	e.g = g
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ln) }()
	e.base = "http://" + ln.Addr().String()
	opsSrv := httptest.NewServer(g.OpsHandler())
	t.Cleanup(opsSrv.Close)
	e.opsBase = opsSrv.URL
	e.client = &http.Client{Transport: &http.Transport{DisableCompression: true}}
	e.stop = sync.OnceValue(func() error {
		cancel()
		return <-done
	})
	t.Cleanup(func() {
		if err := e.stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
		e.client.CloseIdleConnections()
		cleanRedis(t, cfg.RateLimitPrefix)
		_ = g.Close()
	})
	return e
}

func randHex(t testing.TB) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func cleanRedis(t testing.TB, prefix string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
	for iter.Next(ctx) {
		rdb.Del(ctx, iter.Val())
	}
}

// req is one request to the gateway.
type req struct {
	method, path string
	header       map[string]string
	body         io.Reader
	length       int64 // Content-Length when body is not sized; -1 for chunked
	token        string
}

// response is what the gateway answered, with the body read.
type response struct {
	status int
	header http.Header
	body   []byte
	close  bool // the server closes the connection after it
}

// ops GETs path from the ops listener.
func (e *env) ops(path string) response {
	e.t.Helper()
	resp, err := e.client.Get(e.opsBase + path)
	if err != nil {
		e.t.Fatalf("ops %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (e *env) do(r req) response {
	e.t.Helper()
	method := r.method
	if method == "" {
		method = http.MethodGet
	}
	hr, err := http.NewRequest(method, e.base+r.path, r.body)
	if err != nil {
		e.t.Fatal(err)
	}
	if r.length != 0 {
		hr.ContentLength = r.length // -1: chunked
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	resp, err := e.client.Do(hr)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, r.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read: %v", method, r.path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b, close: resp.Close}
}

// problemBody is the problem+json shape.
type problemBody struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Code      string `json:"code"`
	RequestID string `json:"request_id"`
}

// wantProblem asserts status, content type, code and request id of a problem.
func wantProblem(t *testing.T, r response, status int, code string) problemBody {
	t.Helper()
	b := problemtest.Want(t, r.status, r.header, r.body, status, code)
	if b.RequestID == "" || b.RequestID != r.header.Get("X-Request-Id") {
		t.Errorf("request_id %q, X-Request-Id %q", b.RequestID, r.header.Get("X-Request-Id"))
	}
	return problemBody{Type: b.Type, Title: b.Title, Status: b.Status, Detail: b.Detail, Code: b.Code, RequestID: b.RequestID}
}

// echoed decodes a fake service's echo.
func echoed(t *testing.T, r response) seen {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status = %d, want 200; body %s", r.status, r.body)
	}
	var s seen
	if err := json.Unmarshal(r.body, &s); err != nil {
		t.Fatalf("echo body %q: %v", r.body, err)
	}
	return s
}

// closedURL is a URL nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatal(err)
	}
	return "http://" + addr
}

// zeros is an endless reader of zero bytes (bodies without allocation).
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// fakeClock is a settable time source.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func readAll(t testing.TB, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
