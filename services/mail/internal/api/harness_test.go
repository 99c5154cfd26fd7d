package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/authtest"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/contactsapi/contactsapitest"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi/leadsapitest"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem/problemtest"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/mail/internal/api"
	"github.com/opencrm/crm/services/mail/internal/imapsync"
	"github.com/opencrm/crm/services/mail/internal/jobs"
	"github.com/opencrm/crm/services/mail/internal/mail"
	"github.com/opencrm/crm/services/mail/internal/store"
	"github.com/opencrm/crm/services/mail/migrations"
)

const internalSecret = "test-internal-secret-0123456789"

// TestMain silences the access and sync logs, encoded as in production.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewJSONHandler(io.Discard, nil)))
	os.Exit(m.Run())
}

func migrate(ctx context.Context, d *db.DB) error { return db.Migrate(ctx, d, "mail", migrations.FS) }

// fakeRecords serves contacts' or leads' own fake (each held to its
// provider's contract); down makes it answer 503 as a dependency that is
// down.
type fakeRecords struct {
	srv  *httptest.Server
	put  func(id int64, rec map[string]any)
	mu   sync.Mutex
	down bool
}

func newFakeRecords(t testing.TB, kind string) *fakeRecords {
	t.Helper()
	f := &fakeRecords{}
	var h http.Handler
	if kind == "contacts" {
		c := contactsapitest.NewFake(internalSecret)
		h, f.put = c, c.PutContact
	} else {
		l := leadsapitest.NewFake(internalSecret)
		h, f.put = l, l.AddLead
	}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		down := f.down
		f.mu.Unlock()
		if down {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeRecords) set(id int64, email *string) {
	f.put(id, map[string]any{"first_name": "X", "email": email})
}

func (f *fakeRecords) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

type env struct {
	t        testing.TB
	srv      *httptest.Server
	issuer   *authtest.Issuer
	db       *db.DB
	store    *store.Store
	contacts *fakeRecords
	leads    *fakeRecords
	redis    *redis.Client
	queue    string
}

type envOpts struct {
	// noSecret runs without CRM_SECRET_KEY: mailboxes are off.
	noSecret bool
	// worker runs the asynq worker and scheduler with this sweep interval.
	worker   bool
	interval time.Duration
}

func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	d := testdb.New(t, "mail", migrate, migrations.FS)
	st, err := store.New(d)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: d, store: st, issuer: authtest.New(t),
		contacts: newFakeRecords(t, "contacts"), leads: newFakeRecords(t, "leads")}
	var sealer *mail.Sealer
	var queue *jobs.Queue
	if !o.noSecret {
		sealer, err = mail.NewSealer("test-secret-key-0123456789")
		if err != nil {
			t.Fatal(err)
		}
		e.redis = redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
		e.queue = "mailtest-" + randHex(6)
		cfg := jobs.Config{Queue: e.queue, Interval: o.interval, TaskTimeout: time.Minute}
		queue, err = jobs.NewQueue(e.redis, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			insp := asynq.NewInspectorFromRedisClient(e.redis)
			_ = insp.DeleteQueue(e.queue, true)
			_ = e.redis.Close()
		})
		if o.worker {
			log := slog.New(slog.NewJSONHandler(io.Discard, nil))
			syncer, err := imapsync.New(st, sealer, imapsync.Options{Lease: time.Minute}, log)
			if err != nil {
				t.Fatal(err)
			}
			runner, err := jobs.NewRunner("redis://127.0.0.1:6379/0", cfg, queue, syncer, st, log)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				if err := runner.Run(ctx); err != nil {
					t.Errorf("runner: %v", err)
				}
			}()
			// Registered after the Redis cleanup, so it runs first.
			t.Cleanup(func() { cancel(); <-done })
		}
	}
	var sq mail.SyncQueue
	if queue != nil {
		sq = queue
	}
	svc, err := mail.NewService(st, contactsapi.New(e.contacts.srv.URL, internalSecret),
		leadsapi.New(e.leads.srv.URL, internalSecret), sealer, sq)
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.New(api.Deps{Service: svc, Verifier: e.issuer.Verifier(t)})
	if err != nil {
		t.Fatal(err)
	}
	ops, err := httpx.NewOps()
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(ops.Handler(h))
	t.Cleanup(e.srv.Close)
	return e
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

func (r result) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

// data decodes the "data" member into out.
func (r result) data(t testing.TB, out any) {
	t.Helper()
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		t.Fatalf("data %q: %v", env.Data, err)
	}
}

func (e *env) do(method, path, token string, body any) result {
	e.t.Helper()
	return e.doCT(method, path, token, "application/json", body)
}

// doCT sends body (a string, bytes, or a value to encode) as contentType.
func (e *env) doCT(method, path, token, contentType string, body any) result {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
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

func (e *env) user(id int64) string  { return e.issuer.User(e.t, id) }
func (e *env) admin(id int64) string { return e.issuer.Admin(e.t, id) }

// wantProblem checks an RFC 9457 answer: status, media type, code and the
// fields named in errors (in order); none when no field is given.
func wantProblem(t *testing.T, r result, status int, code string, fields ...string) {
	t.Helper()
	b := problemtest.Want(t, r.status, r.header, r.body, status, code, fields...)
	if len(fields) == 0 && len(b.Errors) > 0 {
		t.Errorf("error fields = %v, want none", b.Errors)
	}
}

// eventually polls cond until it holds or a generous deadline passes; it
// asserts the outcome of background work, never its speed.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: did not happen", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }
