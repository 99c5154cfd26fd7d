package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/authtest"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/identityapi/identityapitest"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/leads/internal/api"
	"github.com/opencrm/crm/services/leads/internal/csvio"
	"github.com/opencrm/crm/services/leads/internal/leads"
	"github.com/opencrm/crm/services/leads/internal/store"
)

const secret = "test-internal-secret-123"

// env is one test's running leads API with fake contacts and deals.
type env struct {
	t        testing.TB
	h        http.Handler
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
	st, err := store.New(d, users)
	if err != nil {
		t.Fatal(err)
	}
	fc := newFakeContacts(t)
	fd := newFakeDeals(t, fc)
	svc, err := leads.NewService(st, contactsapi.New(fc.URL, secret), dealsapi.New(fd.URL(), secret))
	if err != nil {
		t.Fatal(err)
	}
	iss := authtest.New(t)
	csv, err := csvio.New(d, st)
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
		t: t, h: ops.Handler(h), store: st, issuer: iss, contacts: fc, deals: fd, identity: idf,
		user: iss.Token(t, 1, "user", &team), admin: iss.Admin(t, 2),
	}
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

// wantProblem checks status, problem+json, code, and (for 422) fields.
func wantProblem(t testing.TB, r resp, status int, code string, fields ...string) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != problem.ContentType {
		t.Fatalf("Content-Type = %q, want %q", ct, problem.ContentType)
	}
	m := r.json(t)
	if m["code"] != code {
		t.Fatalf("code = %v, want %s: %s", m["code"], code, r.body)
	}
	if len(fields) > 0 {
		got := map[string]bool{}
		errs, _ := m["errors"].([]any)
		for _, fe := range errs {
			got[fe.(map[string]any)["field"].(string)] = true
		}
		for _, f := range fields {
			if !got[f] {
				t.Fatalf("errors lack field %q: %s", f, r.body)
			}
		}
	}
	return m
}

// idemStore gives a fake service real Idempotency-Key semantics: the
// same key and body replays, another body is 409, no key runs each time.
type idemStore struct {
	mu      sync.Mutex
	answers map[string]idemAnswer
}

type idemAnswer struct {
	hash   [32]byte
	status int
	body   []byte
}

func (s *idemStore) run(w http.ResponseWriter, r *http.Request, raw []byte, fn func(body []byte) (int, any)) {
	// Hash the decoded JSON so key order and spacing do not matter.
	var v any
	_ = json.Unmarshal(raw, &v)
	norm, _ := json.Marshal(v)
	sum := sha256.Sum256(norm)
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.answers[key]; ok && key != "" {
		if a.hash != sum {
			problem.Write(w, r, problem.Conflict("idempotency_key_reused", "other body"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_, _ = w.Write(a.body)
		return
	}
	status, out := fn(raw)
	if p, ok := out.(error); ok {
		problem.Write(w, r, p)
		return
	}
	body, _ := json.Marshal(out)
	if key != "" {
		s.answers[key] = idemAnswer{hash: sum, status: status, body: body}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// fakeContacts implements the contacts internal API in memory.
type fakeContacts struct {
	*httptest.Server
	idem      idemStore
	mu        sync.Mutex
	contacts  map[int64]map[string]any
	companies map[int64]map[string]any
	nextID    int64
}

var punct = regexp.MustCompile(`[^a-z0-9 ]+`)

func normName(s string) string {
	return strings.Join(strings.Fields(punct.ReplaceAllString(strings.ToLower(s), "")), " ")
}

func newFakeContacts(t testing.TB) *fakeContacts {
	f := &fakeContacts{contacts: map[int64]map[string]any{}, companies: map[int64]map[string]any{}, nextID: 100}
	f.idem.answers = map[string]idemAnswer{}
	mux := http.NewServeMux()
	create := func(kind string, m map[int64]map[string]any, required string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			f.idem.run(w, r, body, func(raw []byte) (int, any) {
				var rec map[string]any
				if err := json.Unmarshal(raw, &rec); err != nil {
					return 0, problem.MalformedJSON("bad")
				}
				if s, _ := rec[required].(string); s == "" {
					return 0, problem.Invalid(required, "is required")
				}
				f.mu.Lock()
				defer f.mu.Unlock()
				f.nextID++
				rec["id"] = f.nextID
				m[f.nextID] = rec
				return http.StatusCreated, map[string]any{"data": rec}
			})
		}
	}
	get := func(m map[int64]map[string]any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
			f.mu.Lock()
			rec, ok := m[id]
			f.mu.Unlock()
			if !ok {
				problem.Write(w, r, problem.NotFound(""))
				return
			}
			httpx.JSON(w, 200, map[string]any{"data": rec})
		}
	}
	mux.HandleFunc(contactsapi.RouteCreateContact, create("contact", f.contacts, "first_name"))
	mux.HandleFunc(contactsapi.RouteCreateCompany, create("company", f.companies, "name"))
	mux.HandleFunc(contactsapi.RouteContact, get(f.contacts))
	mux.HandleFunc(contactsapi.RouteCompany, get(f.companies))
	mux.HandleFunc(contactsapi.RouteMatchCompanies, func(w http.ResponseWriter, r *http.Request) {
		want := normName(r.URL.Query().Get("name"))
		out := []map[string]any{}
		f.mu.Lock()
		for _, c := range f.companies {
			if n := normName(c["name"].(string)); n != "" && (strings.Contains(n, want) || strings.Contains(want, n)) {
				out = append(out, map[string]any{"id": c["id"], "name": c["name"], "score": 1.0})
			}
		}
		f.mu.Unlock()
		httpx.JSON(w, 200, map[string]any{"data": out})
	})
	mux.HandleFunc(contactsapi.RouteMatchContacts, func(w http.ResponseWriter, r *http.Request) {
		want := strings.ToLower(r.URL.Query().Get("email"))
		out := []map[string]any{}
		f.mu.Lock()
		for _, c := range f.contacts {
			if e, _ := c["email"].(string); strings.ToLower(e) == want {
				out = append(out, c)
			}
		}
		f.mu.Unlock()
		httpx.JSON(w, 200, map[string]any{"data": out})
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

// has tells whether the contact or company id exists.
func (f *fakeContacts) has(m map[int64]map[string]any, id int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := m[id]
	return ok
}

// deleteContact removes a contact, as DELETE /contacts/{id} does.
func (f *fakeContacts) deleteContact(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.contacts, id)
}

func (f *fakeContacts) counts() (contacts, companies int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.contacts), len(f.companies)
}

// fakeDeals implements POST /internal/deals and can be stopped (its
// listener closed: connection refused) and restarted on the same address.
// Like deals, it validates a body (stage, company and contact exist)
// before it looks up the Idempotency-Key, so a replayed request whose
// contact was deleted meanwhile is a 422.
type fakeDeals struct {
	t        testing.TB
	addr     string
	idem     idemStore
	contacts *fakeContacts
	mu       sync.Mutex
	deals    map[int64]map[string]any
	sent     []string // every body received, in order
	lose     int      // answers to lose after creating: 504 instead
	srv      *http.Server
}

func newFakeDeals(t testing.TB, contacts *fakeContacts) *fakeDeals {
	f := &fakeDeals{t: t, contacts: contacts, deals: map[int64]map[string]any{}}
	f.idem.answers = map[string]idemAnswer{}
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
	mux := http.NewServeMux()
	mux.HandleFunc(dealsapi.RouteCreateDeal, func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.sent = append(f.sent, string(raw))
		lose := f.lose > 0
		if lose {
			f.lose--
		}
		f.mu.Unlock()
		var in map[string]any
		if err := json.Unmarshal(raw, &in); err != nil {
			problem.Write(w, r, problem.MalformedJSON("bad"))
			return
		}
		if s, ok := in["stage_id"].(float64); ok && (s < 1 || s > 6) {
			problem.Write(w, r, problem.Invalid("stage_id", "is not an existing stage"))
			return
		}
		for _, ref := range []struct {
			field string
			m     map[int64]map[string]any
		}{{"company_id", f.contacts.companies}, {"contact_id", f.contacts.contacts}} {
			if id, ok := in[ref.field].(float64); ok && !f.contacts.has(ref.m, int64(id)) {
				problem.Write(w, r, problem.Invalid(ref.field, "does not exist"))
				return
			}
		}
		if lose {
			// Created and stored under the key, but the answer never
			// reaches leads: its outcome is unknown there.
			f.idem.run(httptest.NewRecorder(), r, raw, f.create)
			problem.Write(w, r, problem.Timeout("deals did not answer in time"))
			return
		}
		f.idem.run(w, r, raw, f.create)
	})
	mux.HandleFunc(dealsapi.RouteStage, func(w http.ResponseWriter, r *http.Request) {
		if id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64); id < 1 || id > 6 {
			problem.Write(w, r, problem.NotFound("stage"))
			return
		}
		httpx.OK(w, map[string]any{"id": r.PathValue("id")})
	})
	f.srv = &http.Server{Handler: mux}
	go func() { _ = f.srv.Serve(ln) }()
}

// create stores a validated deal body.
func (f *fakeDeals) create(raw []byte) (int, any) {
	var rec map[string]any
	if err := json.Unmarshal(raw, &rec); err != nil {
		return 0, problem.MalformedJSON("bad")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id := int64(len(f.deals) + 500)
	rec["id"] = id
	f.deals[id] = rec
	return http.StatusCreated, map[string]any{"data": rec}
}

func (f *fakeDeals) stop() {
	if f.srv != nil {
		_ = f.srv.Close()
		f.srv = nil
	}
}

func (f *fakeDeals) restart() { f.start(f.addr) }

func (f *fakeDeals) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.deals)
}

// loseNextAnswer makes the next creating call create the deal and then
// answer 504, as a call that timed out after deals committed.
func (f *fakeDeals) loseNextAnswer() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lose++
}

// bodies returns every body POSTed so far, in order.
func (f *fakeDeals) bodies() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sent...)
}

func (f *fakeDeals) get(id int64) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return copyMap(f.deals[id])
}

func (f *fakeContacts) contact(id int64) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return copyMap(f.contacts[id])
}

func copyMap(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
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
