package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/authtest"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/identityapi/identityapitest"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi/leadsapitest"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/intake/internal/api"
	"github.com/opencrm/crm/services/intake/internal/apikey"
	"github.com/opencrm/crm/services/intake/internal/intake"
	"github.com/opencrm/crm/services/intake/internal/ratelimit"
	"github.com/opencrm/crm/services/intake/internal/store"
	"github.com/opencrm/crm/services/intake/migrations"
)

const secret = "test-internal-secret-0123456789"

// TestMain sends the access log (written through slog's default logger)
// to nowhere, encoded as in production, so test output stays readable.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewJSONHandler(io.Discard, nil)))
	os.Exit(m.Run())
}

func migrate(ctx context.Context, d *db.DB) error { return db.Migrate(ctx, d, "intake", migrations.FS) }

// fakeLeads implements POST /internal/leads/batch with in-memory
// idempotency per item key. It can be stopped (its listener closed) and
// restarted on the same address.
type fakeLeads struct {
	t    testing.TB
	addr string

	mu      sync.Mutex
	srv     *http.Server
	fake    *leadsapitest.Fake // leads' own fake: per-item answers and idempotency
	loseNow int                // answer 503 after creating, this many times
	refuse  bool               // answer 422
	block   chan struct{}      // when set, wait for it to close before answering
	entered chan struct{}      // receives when a blocked request arrived
}

func newFakeLeads(t testing.TB) *fakeLeads {
	t.Helper()
	f := &fakeLeads{t: t, fake: leadsapitest.NewFake(secret)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	f.serve(ln)
	t.Cleanup(f.stop)
	return f
}

func (f *fakeLeads) url() string { return "http://" + f.addr }

func (f *fakeLeads) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(f.handle)}
	f.mu.Lock()
	f.srv = srv
	f.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// stop closes the listener and every connection: leads is down.
func (f *fakeLeads) stop() {
	f.mu.Lock()
	srv := f.srv
	f.srv = nil
	f.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// restart listens on the same address again.
func (f *fakeLeads) restart() {
	f.t.Helper()
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", f.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		f.t.Fatalf("restart fake leads: %v", err)
	}
	f.serve(ln)
}

// handle serves leads' fake, with this test's faults around it: a
// blocked answer, an answer lost after the leads were created (503), or
// every item refused.
func (f *fakeLeads) handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == leadsapi.PathDuplicates {
		// The duplicate lookup beside each submission: the faults are
		// the batch's (duplicates_test.go sets the lookup's own).
		f.fake.ServeHTTP(w, r)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(raw))
	f.mu.Lock()
	block, entered, refuse := f.block, f.entered, f.refuse
	lose := f.loseNow > 0
	if lose {
		f.loseNow--
	}
	f.mu.Unlock()
	if block != nil {
		entered <- struct{}{}
		<-block
	}
	if refuse {
		var in leadsapi.BatchRequest
		_ = json.Unmarshal(raw, &in)
		answers := make([]leadsapi.BatchResult, len(in.Items))
		for i := range answers {
			answers[i] = leadsapi.BatchResult{Status: http.StatusUnprocessableEntity,
				Body: json.RawMessage(`{"status":422,"code":"validation_failed","detail":"refused","errors":[{"field":"email","message":"is blocked"}]}`)}
		}
		httpx.OK(w, answers)
		return
	}
	if lose {
		f.fake.ServeHTTP(httptest.NewRecorder(), r)
		http.Error(w, "lost", http.StatusServiceUnavailable)
		return
	}
	f.fake.ServeHTTP(w, r)
}

// forwarded is a lead as leads received it from intake.
type forwarded struct {
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Email     string `json:"email"`
	Phone     string `json:"phone,omitempty"`
	Company   string `json:"company,omitempty"`
	JobTitle  string `json:"job_title,omitempty"`
	Source    string `json:"source"`
	Notes     string `json:"notes,omitempty"`
}

func (f *fakeLeads) created() []forwarded {
	leads, _ := f.fake.Created()
	out := []forwarded{}
	for _, l := range leads {
		var lf forwarded
		b, _ := json.Marshal(l)
		if err := json.Unmarshal(b, &lf); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, lf)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (f *fakeLeads) idemKeys() []string {
	_, keys := f.fake.Created()
	return keys
}

// env is one intake service wired to fakes, a fresh database and a
// private Redis key prefix.
type env struct {
	t           testing.TB
	srv         *httptest.Server
	identity    *identityapitest.Fake
	identitySrv *httptest.Server
	leads       *fakeLeads
	svc         *intake.Service
	store       *store.Store
	db          *db.DB
	ops         *httpx.Ops
	issuer      *authtest.Issuer
}

type envOpt func(*envConfig)

type envConfig struct {
	cors     []string
	cacheTTL time.Duration
	// quiet turns INTAKE_REPORT_DUPLICATES off (the harness reports them).
	quiet bool
}

func withCORS(origins ...string) envOpt { return func(c *envConfig) { c.cors = origins } }

func withCacheTTL(d time.Duration) envOpt { return func(c *envConfig) { c.cacheTTL = d } }

func withoutDuplicates() envOpt { return func(c *envConfig) { c.quiet = true } }

func newEnv(t testing.TB, opts ...envOpt) *env {
	t.Helper()
	ec := envConfig{cacheTTL: apikey.MaxTTL}
	for _, o := range opts {
		o(&ec)
	}
	d := testdb.New(t, "intake", migrate, migrations.FS)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	prefix := "test:intake:" + randHex(8) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		_ = rdb.Close()
	})
	identity := identityapitest.NewFake(secret)
	identitySrv, identityClient := identity.Start(t)
	leads := newFakeLeads(t)
	cfg := intake.Config{
		ForwardTimeout: 2 * time.Second,
		Lease:          3 * time.Second,
		RetryInterval:  20 * time.Millisecond,
		RetryBase:      10 * time.Millisecond,
		RetryMax:       50 * time.Millisecond,
		MaxAttempts:    1000,
		Batch:          10,
		IdemTTL:        24 * time.Hour,
		WriteBehind:    64,
		BatchSize:      10,
		Flushers:       2,

		ReportDuplicates: !ec.quiet,
	}
	ops, err := httpx.NewOps()
	if err != nil {
		t.Fatal(err)
	}
	m, err := intake.NewMetrics(ops.Registry)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(d, store.Options{IdemTTL: cfg.IdemTTL, Orphaned: cfg.Lease})
	if err != nil {
		t.Fatal(err)
	}
	up := leadsapi.New(leads.url(), secret)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := intake.NewService(st, up, cfg, m, log)
	if err != nil {
		t.Fatal(err)
	}
	finCtx, stopFin := context.WithCancel(context.Background())
	finDone := make(chan struct{})
	go func() { defer close(finDone); svc.RunFinisher(finCtx) }()
	t.Cleanup(func() { stopFin(); <-finDone })
	keys, err := apikey.New(identityClient, ec.cacheTTL)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := ratelimit.New(rdb, prefix)
	if err != nil {
		t.Fatal(err)
	}
	issuer := authtest.New(t)
	h, err := api.New(api.Deps{
		Service: svc, Store: st, Keys: keys, Limiter: lim, Verifier: issuer.Verifier(t),
		CORSOrigins: ec.cors, Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ops.Handler(h))
	t.Cleanup(srv.Close)
	return &env{t: t, srv: srv, identity: identity, identitySrv: identitySrv, leads: leads, svc: svc, store: st, db: d, ops: ops, issuer: issuer}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newKey registers a fresh API key with the fake identity.
func (e *env) newKey(id int64, limit int, origins ...string) string {
	s := "crm_live_" + randHex(16)
	e.identity.AddKey(s, identityapi.VerifiedKey{ID: id, RateLimitPerMinute: limit, AllowedOrigins: origins})
	return s
}

type result struct {
	status int
	header http.Header
	body   []byte
}

func (r result) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

func (e *env) do(method, path string, header map[string]string, body []byte) result {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return result{status: resp.StatusCode, header: resp.Header, body: raw}
}

// post submits body as JSON with the key (and optional extra headers).
func (e *env) post(key string, body string, extra ...string) result {
	e.t.Helper()
	h := map[string]string{"Content-Type": "application/json"}
	if key != "" {
		h["X-API-Key"] = key
	}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return e.do(http.MethodPost, "/public/leads", h, []byte(body))
}

const validBody = `{"first_name":"Ada","last_name":"Lovelace","email":"ada@example.com","company":"Analytical","notes":"call me"}`

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// counter reads a counter's value from the env's registry.
func (e *env) counter(name string, labels map[string]string) float64 {
	e.t.Helper()
	mfs, err := e.ops.Registry.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// firstPage is the admin list's default query: the first page in its default order.
func firstPage() list.Query { return list.First(list.DefaultPerPage, intake.DefaultSort) }
