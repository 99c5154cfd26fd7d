package api_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/authtest"
	"github.com/opencrm/crm/pkg/contract/contactsapi/contactsapitest"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/sealbox"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/webhooks/internal/api"
	"github.com/opencrm/crm/services/webhooks/internal/delivery"
	"github.com/opencrm/crm/services/webhooks/internal/ingest"
	"github.com/opencrm/crm/services/webhooks/internal/store"
	"github.com/opencrm/crm/services/webhooks/internal/webhooks"
	"github.com/opencrm/crm/services/webhooks/migrations"
)

// redisURL is this package's Redis database (WEBHOOKS_TEST_REDIS_URL, else
// database 12: a server's default 16 databases must do); each env uses its
// own asynq queue and stream names in it.
var redisURL = cmp.Or(os.Getenv("WEBHOOKS_TEST_REDIS_URL"), "redis://127.0.0.1:6379/12")

func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewJSONHandler(io.Discard, nil)))
	os.Exit(m.Run())
}

func migrate(ctx context.Context, d *db.DB) error {
	if err := db.Migrate(ctx, d, "webhooks", migrations.FS); err != nil {
		return err
	}
	return outbox.Migrate(ctx, d)
}

// dns is a resolver whose answers a test changes.
type dns struct {
	mu sync.Mutex
	m  map[string][]netip.Addr
}

func (r *dns) set(host string, addrs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var as []netip.Addr
	for _, a := range addrs {
		as = append(as, netip.MustParseAddr(a))
	}
	r.m[host] = as
}

func (r *dns) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.m[host]; ok {
		return a, nil
	}
	return nil, &netErr{}
}

type netErr struct{}

func (*netErr) Error() string { return "no such host" }

type env struct {
	t      testing.TB
	srv    *httptest.Server
	store  *store.Store
	db     *db.DB
	engine *delivery.Engine
	ingest *ingest.Ingester
	// contacts answers the contacts internal API (the records of a CSV
	// import) from memory.
	contacts *contactsapitest.Fake
	issuer   *authtest.Issuer
	admin    string
	rdb      *redis.Client
	dns      *dns
	ops      *httpx.Ops
	cfg      delivery.Config
	box      *sealbox.Box
	log      *slog.Logger
	nextID   int64
	stopRun  func()
}

type config struct {
	strict  bool // https only, private addresses refused
	workers bool
	cfg     delivery.Config
}

type opt func(*config)

// strict refuses http and private addresses, as in production.
func strict() opt { return func(c *config) { c.strict = true; c.cfg.AllowPrivate = false } }

// noWorkers leaves the dispatcher and the workers stopped.
func noWorkers() opt { return func(c *config) { c.workers = false } }

func withDelivery(f func(*delivery.Config)) opt { return func(c *config) { f(&c.cfg) } }

func newEnv(t testing.TB, opts ...opt) *env {
	t.Helper()
	c := config{workers: true, cfg: delivery.Config{
		Queue: "test-webhooks-" + randHex(6), Workers: 8, PerEndpoint: 4, Timeout: 2 * time.Second,
		Schedule: []time.Duration{50 * time.Millisecond}, Jitter: -1, Tick: 20 * time.Millisecond,
		StaleAfter: 3 * time.Second, AllowPrivate: true, TaskRetryDelay: 100 * time.Millisecond,
	}}
	for _, o := range opts {
		o(&c)
	}
	d := testdb.New(t, "webhooks", migrate, migrations.FS, outbox.Migrations)
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	r := &dns{m: map[string][]netip.Addr{}}
	c.cfg.Resolver = r
	st, err := store.New(d)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := httpx.NewOps()
	if err != nil {
		t.Fatal(err)
	}
	box, err := sealbox.New("test-secret-key-0123456789", "opencrm/webhooks/signing-secret/v1")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e := &env{t: t, store: st, db: d, rdb: rdb, dns: r, ops: ops, cfg: c.cfg, box: box, log: log}
	e.engine = e.newEngine(ops.Registry)
	e.contacts = contactsapitest.NewFake("test-internal-secret-0123456789")
	_, contacts := e.contacts.Start(t)
	e.ingest, err = ingest.New(st, contacts, e.engine.Wake)
	if err != nil {
		t.Fatal(err)
	}
	e.issuer = authtest.New(t)
	e.admin = e.issuer.Admin(t, 7)
	h, err := api.New(api.Deps{
		Store: st, Pinger: e.engine, Sealer: box, Verifier: e.issuer.Verifier(t), Grace: 24 * time.Hour,
		Policy: webhooks.URLPolicy{AllowHTTP: !c.strict, AllowPrivate: !c.strict, Resolver: r},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(ops.Handler(h))
	t.Cleanup(e.srv.Close)
	if c.workers {
		e.start()
	}
	t.Cleanup(func() {
		if e.stopRun != nil {
			e.stopRun()
		}
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, "asynq:{"+c.cfg.Queue+"}:*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		rdb.SRem(ctx, "asynq:queues", c.cfg.Queue)
	})
	return e
}

// newEngine is one process's delivery engine, its metrics on reg.
func (e *env) newEngine(reg prometheus.Registerer) *delivery.Engine {
	e.t.Helper()
	opt, _ := redis.ParseURL(redisURL)
	m, err := delivery.NewMetrics(reg, e.store.DB())
	if err != nil {
		e.t.Fatal(err)
	}
	eng, err := delivery.New(e.store, e.rdb, delivery.OwnRedis(opt), e.box, m, e.cfg, e.log)
	if err != nil {
		e.t.Fatal(err)
	}
	return eng
}

// start runs the dispatcher, the sweeper and the workers of e.engine.
func (e *env) start() {
	ctx, cancel := context.WithCancel(context.Background())
	stop := runAll(ctx, e.engine.RunDispatcher, e.engine.RunSweeper, func(ctx context.Context) {
		if err := e.engine.RunWorkers(ctx); err != nil {
			e.t.Error(err)
		}
	})
	e.stopRun = func() { cancel(); stop() }
}

// stop stops the engine's loops and workers (a process going away).
func (e *env) stop() {
	if e.stopRun != nil {
		e.stopRun()
		e.stopRun = nil
	}
}

func runAll(ctx context.Context, fns ...func(context.Context)) func() {
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Add(1)
		go func() { defer wg.Done(); fn(ctx) }()
	}
	return wg.Wait
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type result struct {
	status int
	header http.Header
	body   []byte
}

func (e *env) do(method, path, token string, body any) result {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: raw}
}

func decode[T any](t testing.TB, r result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	return v
}

type record[T any] struct {
	Success bool   `json:"success"`
	Data    T      `json:"data"`
	Message string `json:"message"`
}

type page[T any] struct {
	Data  []T `json:"data"`
	Total int `json:"total"`
}

// hook is a created webhook with its secret.
type hook struct {
	ID     int64    `json:"id"`
	URL    string   `json:"url"`
	Events []string `json:"events"`
	Active bool     `json:"active"`
	Secret string   `json:"secret"`

	DisabledReason *string `json:"disabled_reason"`
	SecretPrefix   string  `json:"secret_prefix"`
	PreviousExp    *string `json:"previous_secret_expires_at"`
	Description    string  `json:"description"`
}

type delivered struct {
	ID         int64   `json:"id"`
	WebhookID  int64   `json:"webhook_id"`
	EventID    string  `json:"event_id"`
	EventType  string  `json:"event_type"`
	Status     string  `json:"status"`
	Attempt    int     `json:"attempt"`
	StatusCode *int    `json:"status_code"`
	Error      *string `json:"error"`
	Response   *string `json:"response_body"`
	NextAt     *string `json:"next_attempt_at"`
}

// create makes a webhook to url for events.
func (e *env) create(url string, events ...string) hook {
	e.t.Helper()
	r := e.do(http.MethodPost, "/webhooks", e.admin, map[string]any{"url": url, "events": events})
	if r.status != http.StatusCreated {
		e.t.Fatalf("create: %d %s", r.status, r.body)
	}
	return decode[record[hook]](e.t, r).Data
}

// emit feeds one event to the ingester as a stream would.
func (e *env) emit(source, typ, recordID string, data any) {
	e.t.Helper()
	raw, _ := json.Marshal(data)
	e.nextID++
	err := e.ingest.Handler(source)(context.Background(), outbox.Event{
		ID: e.nextID, Type: typ, AggregateID: recordID, OccurredAt: time.Now(), Data: raw,
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) deliveries(id int64, query string) []delivered {
	e.t.Helper()
	r := e.do(http.MethodGet, "/webhooks/"+strconv.FormatInt(id, 10)+"/deliveries"+query, e.admin, nil)
	if r.status != http.StatusOK {
		e.t.Fatalf("deliveries: %d %s", r.status, r.body)
	}
	return decode[page[delivered]](e.t, r).Data
}

// eventually polls cond until it holds or 15 s pass.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scoped signs an integration token's access token with scopes.
func (e *env) scoped(scopes ...string) string {
	now := time.Now()
	return e.issuer.Sign(e.t, auth.Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: auth.Issuer, Audience: jwt.ClaimStrings{auth.Audience}, Subject: "99",
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(15 * time.Minute)),
		},
		Role: auth.RoleUser, Scopes: scopes,
	})
}
