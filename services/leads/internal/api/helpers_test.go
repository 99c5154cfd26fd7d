package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/authtest"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/contactsapi/contactsapitest"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi/dealsapitest"
	"github.com/opencrm/crm/pkg/contract/identityapi/identityapitest"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/problem/problemtest"
	"github.com/opencrm/crm/pkg/svcclient"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/leads/internal/api"
	"github.com/opencrm/crm/services/leads/internal/leads"
	"github.com/opencrm/crm/services/leads/internal/store"
)

const secret = "test-internal-secret-123"

// env is one test's running leads API with fake contacts and deals.
type env struct {
	t        testing.TB
	h        http.Handler
	db       *db.DB
	store    *store.Store
	issuer   *authtest.Issuer
	contacts *fakeContacts
	deals    *fakeDeals
	identity *identityapitest.Fake
	user     string // token of user 1 (regular)
	admin    string // token of user 2 (admin)
}

func newEnv(t testing.TB) *env {
	t.Helper()
	d := testdb.New(t, "leads", store.Migrate, store.MigrationSets...)
	idf := identityapitest.NewFake(secret)
	_, idc := idf.Start(t)
	users, err := directory.NewUsers(d, idc)
	if err != nil {
		t.Fatal(err)
	}
	fc := newFakeContacts(t)
	fd := newFakeDeals(t, fc)
	h, st, iss := serve(t, d, users, fc.URL, fd.URL())
	team := int64(7)
	ctx := context.Background()
	now := time.Now()
	for _, u := range []directory.User{
		{ID: 1, Name: "Uma User", Email: "uma@example.com", Role: "user", TeamID: &team, Active: true, UpdatedAt: now},
		{ID: 2, Name: "Ada Admin", Email: "ada@example.com", Role: "admin", Active: true, UpdatedAt: now},
		{ID: 3, Name: "Tom Teammate", Email: "tom@example.com", Role: "user", TeamID: &team, Active: true, UpdatedAt: now},
		{ID: 4, Name: "Olga Other", Email: "olga@example.com", Role: "user", Active: true, UpdatedAt: now},
	} {
		if err := directory.Upsert(ctx, d, u); err != nil {
			t.Fatal(err)
		}
	}
	return &env{
		t: t, h: h, db: d, store: st, issuer: iss, contacts: fc, deals: fd, identity: idf,
		user: iss.Token(t, 1, "user", &team), admin: iss.Admin(t, 2),
	}
}

// serve is the leads API, with its ops endpoints, on d, calling contacts
// and deals at their URLs.
func serve(t testing.TB, d *db.DB, users *directory.Users, contactsURL, dealsURL string) (http.Handler, *store.Store, *authtest.Issuer) {
	t.Helper()
	st, err := store.New(d, users)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := leads.NewService(st, leads.Upstreams{
		Contacts: contactsapi.New(contactsURL, secret), Deals: dealsapi.New(dealsURL, secret),
		ContactFields: propertyapi.NewClient(svcclient.New("contacts", contactsURL, secret)),
		DealFields:    propertyapi.NewClient(svcclient.New("deals", dealsURL, secret)),
	})
	if err != nil {
		t.Fatal(err)
	}
	iss := authtest.New(t)
	csv, err := api.NewCSV(d, st)
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.New(api.Config{Service: svc, DB: d, Verifier: iss.Verifier(t), InternalSecret: secret, CSV: csv})
	if err != nil {
		t.Fatal(err)
	}
	ops, err := httpx.NewOps()
	if err != nil {
		t.Fatal(err)
	}
	return ops.Handler(h), st, iss
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, r.body)
	}
	return m
}

// do sends a JSON request (body may be nil, a string or a value).
func (e *env) do(method, path, token string, body any) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return e.serve(req)
}

func (e *env) serve(req *http.Request) resp {
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return resp{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// createLead creates a lead and returns its id.
func (e *env) createLead(body map[string]any) int64 {
	e.t.Helper()
	r := e.do("POST", "/leads", e.user, body)
	if r.status != http.StatusCreated {
		e.t.Fatalf("create lead: %d %s", r.status, r.body)
	}
	return int64(r.json(e.t)["data"].(map[string]any)["id"].(float64))
}

func path(format string, id int64) string {
	return strings.Replace(format, "{id}", strconv.FormatInt(id, 10), 1)
}

// wantProblem checks status, problem+json, code, and (for 422) fields with
// problemtest.Want, and returns the decoded body.
func wantProblem(t testing.TB, r resp, status int, code string, fields ...string) map[string]any {
	t.Helper()
	problemtest.Want(t, r.status, r.header, r.body, status, code, fields...)
	return r.json(t)
}

// fakeContacts is contacts' own fake (held to contacts' contract) on a
// loopback listener; tests give it definitions with Define.
type fakeContacts struct {
	*contactsapitest.Fake
	*httptest.Server
}

func newFakeContacts(t testing.TB) *fakeContacts {
	f := contactsapitest.NewFake(secret)
	srv, _ := f.Start(t)
	return &fakeContacts{Fake: f, Server: srv}
}

// fakeDeals serves deals' own fake (held to deals' contract, checking
// companies and contacts against the contacts fake) on a listener that
// can be stopped (connection refused) and restarted on the same address,
// and that can lose an answer after the deal was created.
type fakeDeals struct {
	t    testing.TB
	addr string
	fake *dealsapitest.Fake
	mu   sync.Mutex
	sent []string // every create body received, in order
	lose int      // answers to lose after creating: 504 instead
	fail int      // creates to answer 503 without creating
	srv  *http.Server
}

func newFakeDeals(t testing.TB, contacts *fakeContacts) *fakeDeals {
	f := &fakeDeals{t: t, fake: dealsapitest.NewFake(secret,
		dealsapitest.References{Company: contacts.HasCompany, Contact: contacts.HasContact})}
	f.start("127.0.0.1:0")
	t.Cleanup(f.stop)
	return f
}

func (f *fakeDeals) URL() string { return "http://" + f.addr }

func (f *fakeDeals) start(addr string) {
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		f.t.Fatalf("fake deals: %v", err)
	}
	f.addr = ln.Addr().String()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != dealsapi.PathDeals {
			f.fake.ServeHTTP(w, r)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(raw))
		f.mu.Lock()
		f.sent = append(f.sent, string(raw))
		lose, fail := f.lose > 0, f.fail > 0 && f.lose == 0
		if lose {
			f.lose--
		}
		if fail {
			f.fail--
		}
		f.mu.Unlock()
		if fail {
			problem.Write(w, r, problem.Unavailable("deals is unavailable", 1))
			return
		}
		if !lose {
			f.fake.ServeHTTP(w, r)
			return
		}
		// Created and stored under the key, but the answer never reaches
		// leads: its outcome is unknown there. A refusal is answered.
		rec := httptest.NewRecorder()
		f.fake.ServeHTTP(rec, r)
		if rec.Code != http.StatusCreated {
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		problem.Write(w, r, problem.Timeout("deals did not answer in time"))
	})
	f.srv = &http.Server{Handler: h}
	go func() { _ = f.srv.Serve(ln) }()
}

func (f *fakeDeals) stop() {
	if f.srv != nil {
		_ = f.srv.Close()
		f.srv = nil
	}
}

func (f *fakeDeals) restart() { f.start(f.addr) }

// loseNextAnswer makes the next creating call create the deal and then
// answer 504, as a call that timed out after deals committed.
func (f *fakeDeals) loseNextAnswer() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lose++
}

// failNextCreate makes the next creating call answer 503 without creating
// the deal, as a deals that went down after the stage was checked.
func (f *fakeDeals) failNextCreate() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail++
}

// bodies returns every body POSTed so far, in order.
func (f *fakeDeals) bodies() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sent...)
}

// wantExactProblem checks status, problem+json and the whole body against
// want (problemJSON's shape); want's request_id becomes the one the
// answer carries in X-Request-Id.
func wantExactProblem(t testing.TB, r resp, want map[string]any) {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != problem.ContentType {
		t.Fatalf("Content-Type = %q, want %q: %d %s", ct, problem.ContentType, r.status, r.body)
	}
	want["request_id"] = r.header.Get(httpx.RequestIDHeader)
	if diff := cmp.Diff(want["status"], float64(r.status)); diff != "" {
		t.Fatalf("status (-want +got):\n%s%s", diff, r.body)
	}
	if diff := cmp.Diff(want, r.json(t)); diff != "" {
		t.Fatalf("problem body (-want +got):\n%s", diff)
	}
}
