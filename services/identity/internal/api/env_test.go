package api_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/problem/problemtest"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/identity/internal/api"
	"github.com/opencrm/crm/services/identity/internal/identity"
	"github.com/opencrm/crm/services/identity/internal/store"
	"github.com/opencrm/crm/services/identity/migrations"
)

const (
	internalSecret = "test-internal-secret-0123456789"
	adminEmail     = "admin@example.com"
	adminPassword  = "admin-password-1"
	testIP         = "203.0.113.7"
	// accessTTL is the access tokens' lifetime, as CRM_ACCESS_TTL's default.
	accessTTL = 15 * time.Minute
)

// fastArgon keeps tests quick; production parameters are exercised by the
// hasher's own test.
var fastArgon = identity.Argon2Params{MemoryKiB: 64, Iterations: 1, Parallelism: 1}

func migrate(ctx context.Context, d *db.DB) error {
	if err := db.Migrate(ctx, d, "identity", migrations.FS); err != nil {
		return err
	}
	return outbox.Migrate(ctx, d)
}

// newDB returns a fresh, migrated identity database.
func newDB(t testing.TB) *db.DB {
	t.Helper()
	return testdb.New(t, "identity", migrate, migrations.FS, outbox.Migrations)
}

func newRedis(t testing.TB, addr string) (*redis.Client, string) {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	prefix := "test:identity:" + randHex(6) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		_ = rdb.Close()
	})
	return rdb, prefix
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type env struct {
	t       testing.TB
	db      *db.DB
	svc     *identity.Service
	h       http.Handler
	adminID int64
	admin   string // admin access token
}

type options struct {
	// loginFailures limits attempts per (email, IP); limits, when set,
	// replaces every login limit.
	loginFailures int
	limits        identity.Limits
	// window is the throttle window (15 minutes by default).
	window    time.Duration
	secretKey string
	// redisAddr overrides the local Redis (a closed port simulates an outage).
	redisAddr string
}

func (o options) loginLimits() identity.Limits {
	if o.limits != (identity.Limits{}) {
		return o.limits
	}
	return identity.Limits{PerEmailIP: o.loginFailures}
}

// build wires the service and its HTTP handler on d, as main does.
func build(t testing.TB, d *db.DB, o options) (*identity.Service, http.Handler) {
	t.Helper()
	ctx := context.Background()
	rdb, prefix := newRedis(t, o.redisAddr)
	st := store.New(d)
	sealer, err := identity.NewSealer(o.secretKey)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := identity.NewKeyring(ctx, st, sealer, identity.PolicyFor(accessTTL))
	if err != nil {
		t.Fatal(err)
	}
	hasher, err := identity.NewHasher(fastArgon, 4)
	if err != nil {
		t.Fatal(err)
	}
	window := o.window
	if window == 0 {
		window = 15 * time.Minute
	}
	throttle, err := store.NewThrottle(rdb, prefix, window)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := identity.NewService(st, hasher, keys, throttle, identity.Config{
		AccessTTL: accessTTL, RefreshTTL: time.Hour, Limits: o.loginLimits()}, log)
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := auth.NewVerifier(keys, auth.Issuer, auth.Audience)
	if err != nil {
		t.Fatal(err)
	}
	proxies, err := api.ParseTrustedProxies("")
	if err != nil {
		t.Fatal(err)
	}
	a, err := api.New(svc, verifier, internalSecret, proxies)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := httpx.NewOps()
	if err != nil {
		t.Fatal(err)
	}
	return svc, ops.Handler(a.Routes())
}

func newEnv(t testing.TB, o options) *env {
	t.Helper()
	d := newDB(t)
	svc, h := build(t, d, o)
	e := &env{t: t, db: d, svc: svc, h: h}
	u, created, err := svc.BootstrapAdmin(context.Background(), adminEmail, adminPassword)
	if err != nil || !created {
		t.Fatalf("bootstrap admin: created=%v err=%v", created, err)
	}
	e.adminID = u.ID
	e.admin = e.login(adminEmail, adminPassword).AccessToken
	return e
}

type req struct {
	method, path, token, body string
	contentType               string
	header                    map[string]string
	remote                    string
}

func (e *env) do(r req) *httptest.ResponseRecorder {
	e.t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr := httptest.NewRequest(r.method, r.path, body)
	if r.body != "" {
		ct := r.contentType
		if ct == "" {
			ct = "application/json"
		}
		hr.Header.Set("Content-Type", ct)
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	hr.RemoteAddr = testIP + ":4711"
	if r.remote != "" {
		hr.RemoteAddr = r.remote
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, hr)
	return rec
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// decode checks the status and decodes the body into v (if not nil).
func decode(t testing.TB, rec *httptest.ResponseRecorder, status int, v any) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body.String())
	}
	if v != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatalf("decode %s: %v", rec.Body.String(), err)
		}
	}
}

// wantProblem checks a problem+json answer: status, code and the fields
// of a 422.
func wantProblem(t testing.TB, rec *httptest.ResponseRecorder, status int, code string, fields ...string) problem.Body {
	t.Helper()
	return problemtest.Want(t, rec.Code, rec.Header(), rec.Body.Bytes(), status, code, fields...)
}

type userOut struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Email     string `json:"email"`
	Role      string `json:"role"`
	TeamID    *int64 `json:"team_id"`
	Active    bool   `json:"active"`
	EditScope string `json:"edit_scope"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

type sessionOut struct {
	AccessToken  string  `json:"access_token"`
	TokenType    string  `json:"token_type"`
	ExpiresIn    int     `json:"expires_in"`
	RefreshToken string  `json:"refresh_token"`
	User         userOut `json:"user"`
}

type envelope[T any] struct {
	Success bool   `json:"success"`
	Data    T      `json:"data"`
	Message string `json:"message"`
}

func (e *env) login(email, password string) sessionOut {
	e.t.Helper()
	rec := e.do(req{method: "POST", path: "/auth/login", body: mustJSON(map[string]string{"email": email, "password": password})})
	var out envelope[sessionOut]
	decode(e.t, rec, http.StatusOK, &out)
	return out.Data
}

func (e *env) refresh(token string) *httptest.ResponseRecorder {
	e.t.Helper()
	return e.do(req{method: "POST", path: "/auth/refresh", body: mustJSON(map[string]string{"refresh_token": token})})
}

// createUser makes a user through the API and returns it.
func (e *env) createUser(name, email, password, role string, teamID *int64) userOut {
	e.t.Helper()
	body := map[string]any{"name": name, "email": email, "password": password, "role": role}
	if teamID != nil {
		body["team_id"] = *teamID
	}
	rec := e.do(req{method: "POST", path: "/users", token: e.admin, body: mustJSON(body)})
	var out envelope[userOut]
	decode(e.t, rec, http.StatusCreated, &out)
	return out.Data
}

func uniqueEmail(tag string) string { return tag + "-" + randHex(4) + "@example.com" }

// concurrently runs f(0) … f(n-1) in n goroutines released at the same
// moment, and returns when all have finished.
func concurrently(n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f(i)
		}()
	}
	close(start)
	wg.Wait()
}
