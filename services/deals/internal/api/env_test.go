package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/authtest"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/identityapi/identityapitest"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi/leadsapitest"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem/problemtest"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/deals/internal/api"
	"github.com/opencrm/crm/services/deals/internal/deals"
	"github.com/opencrm/crm/services/deals/internal/store"
)

const secret = "test-internal-secret-0123456789"

// Users of the directory read model every test starts with.
const (
	adminID = 1 // team 10
	userID  = 2 // team 10
	otherID = 3 // team 20
)

type env struct {
	t      testing.TB
	db     *db.DB
	store  *store.Store
	h      http.Handler
	admin  string
	user   string
	other  string
	issuer *authtest.Issuer
	leads  *leadsapitest.Fake
}

type envOpt struct{ contactsDown bool }

// newEnv gives a test its own database (cloned from the migrated
// template), a fake contacts service and real tokens.
func newEnv(t testing.TB, opts ...envOpt) *env {
	t.Helper()
	var o envOpt
	if len(opts) > 0 {
		o = opts[0]
	}
	d := testdb.New(t, "deals", store.Migrate, store.MigrationSets...)
	ctx := context.Background()
	ten, twenty := int64(10), int64(20)
	for _, u := range []directory.User{
		{ID: adminID, Name: "Ada Admin", Email: "ada@x.test", Role: "admin", TeamID: &ten, Active: true, UpdatedAt: time.Now()},
		{ID: userID, Name: "Uma User", Email: "uma@x.test", Role: "user", TeamID: &ten, Active: true, UpdatedAt: time.Now()},
		{ID: otherID, Name: "Otto Other", Email: "otto@x.test", Role: "user", TeamID: &twenty, Active: true, UpdatedAt: time.Now()},
	} {
		if err := directory.Upsert(ctx, d, u); err != nil {
			t.Fatal(err)
		}
	}
	contactsURL := fakeContacts(t).URL
	if o.contactsDown {
		down := httptest.NewServer(http.NotFoundHandler())
		contactsURL = down.URL
		down.Close()
	}
	_, idc := identityapitest.NewFake(secret).Start(t)
	users, err := directory.NewUsers(d, idc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(d, users)
	if err != nil {
		t.Fatal(err)
	}
	fl := leadsapitest.NewFake(secret)
	for _, id := range knownLeads {
		fl.AddLead(id, map[string]any{"first_name": "Lead", "last_name": strconv.FormatInt(id, 10)})
	}
	svc, err := deals.NewService(st, contactsapi.New(contactsURL, secret), leadsapi.New(fl.Start(t).URL, secret))
	if err != nil {
		t.Fatal(err)
	}
	iss := authtest.New(t)
	h, err := api.New(api.Config{Service: svc, Verifier: iss.Verifier(t), InternalSecret: secret,
		Properties: customfield.Store{DB: d, Stream: store.Stream}, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	ops, err := httpx.NewOps()
	if err != nil {
		t.Fatal(err)
	}
	return &env{
		t: t, db: d, store: st, h: ops.Handler(h), issuer: iss, leads: fl,
		admin: iss.Token(t, adminID, "admin", &ten),
		user:  iss.Token(t, userID, "user", &ten),
		other: iss.Token(t, otherID, "user", &twenty),
	}
}

// knownLeads are the leads the fake leads service knows.
var knownLeads = []int64{7, 42}

// fakeContacts implements the two internal routes deals reads, with the
// shapes of docs/architecture.md: company 100 (Acme, primary contact 500),
// company 101 (Globex, no primary contact), both as of 2026-01-01, and
// contacts 500 and 501.
func fakeContacts(t testing.TB) *httptest.Server {
	t.Helper()
	contact := func(id int64, first string) map[string]any {
		return map[string]any{"id": id, "first_name": first, "last_name": "Doe", "email": strings.ToLower(first) + "@acme.test", "company_id": 100}
	}
	companies := map[string]map[string]any{
		"100": {"id": 100, "name": "Acme", "domain": "acme.test", "updated_at": "2026-01-01T00:00:00.000000Z", "primary_contact": contact(500, "Pia")},
		"101": {"id": 101, "name": "Globex", "domain": "globex.test", "updated_at": "2026-01-01T00:00:00.000000Z", "primary_contact": nil},
	}
	people := map[string]map[string]any{"500": contact(500, "Pia"), "501": contact(501, "Carl")}
	mux := http.NewServeMux()
	guard := func(fn http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Internal-Token") != secret {
				httpx.JSON(w, http.StatusUnauthorized, map[string]string{"code": "unauthenticated"})
				return
			}
			fn(w, r)
		}
	}
	serve := func(m map[string]map[string]any) http.HandlerFunc {
		return guard(func(w http.ResponseWriter, r *http.Request) {
			rec, ok := m[r.PathValue("id")]
			if !ok {
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte(`{"status":404,"code":"not_found","title":"Not Found"}`))
				return
			}
			httpx.JSON(w, http.StatusOK, map[string]any{"data": rec})
		})
	}
	mux.HandleFunc(contactsapi.RouteCompany, serve(companies))
	mux.HandleFunc(contactsapi.RouteContact, serve(people))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

type resp struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends a request; body may be a string (sent verbatim) or a value
// encoded as JSON. headers come in name, value pairs.
func (e *env) do(method, path, token string, body any, headers ...string) resp {
	e.t.Helper()
	var rd *bytes.Reader
	switch b := body.(type) {
	case nil:
		rd = bytes.NewReader(nil)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return resp{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// internal sends an /internal request with the cluster secret.
func (e *env) internal(method, path string, body any, headers ...string) resp {
	e.t.Helper()
	return e.do(method, path, "", body, append([]string{"X-Internal-Token", secret}, headers...)...)
}

// data decodes {"data": ...} of a success body into out, asserting status.
func (e *env) data(r resp, status int, out any) {
	e.t.Helper()
	if r.Status != status {
		e.t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(r.Body, &env); err != nil {
		e.t.Fatalf("decode %s: %v", r.Body, err)
	}
	if out != nil {
		if err := json.Unmarshal(env.Data, out); err != nil {
			e.t.Fatalf("decode data %s: %v", env.Data, err)
		}
	}
}

// wantProblem asserts a problem+json answer with problemtest.Want: status,
// code and (for 422) exactly the given field names; none given means none.
func wantProblem(t *testing.T, r resp, status int, code string, fields ...string) {
	t.Helper()
	b := problemtest.Want(t, r.Status, r.Header, r.Body, status, code, fields...)
	if len(fields) == 0 && len(b.Errors) > 0 {
		t.Errorf("problem fields %v, want none: %s", b.Errors, r.Body)
	}
}

// dealJSON is the test's view of a deal record.
type dealJSON struct {
	ID                int64   `json:"id"`
	Title             string  `json:"title"`
	Value             string  `json:"value"`
	Currency          string  `json:"currency"`
	StageID           int64   `json:"stage_id"`
	StageName         string  `json:"stage_name"`
	Status            string  `json:"status"`
	CompanyID         *int64  `json:"company_id"`
	CompanyName       *string `json:"company_name"`
	ContactID         *int64  `json:"contact_id"`
	ExpectedCloseDate *string `json:"expected_close_date"`
	AssignedTo        *int64  `json:"assigned_to"`
	AssignedToName    *string `json:"assigned_to_name"`
	SourceLeadID      *int64  `json:"source_lead_id"`
	CreatedAt         string  `json:"created_at"`
	UpdatedAt         string  `json:"updated_at"`
}

type stageJSON struct {
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	Position int    `json:"position"`
	Outcome  string `json:"outcome"`
}

type lineJSON struct {
	Description string          `json:"description"`
	Quantity    json.RawMessage `json:"quantity"`
	UnitPrice   string          `json:"unit_price"`
	Amount      string          `json:"amount"`
}

type quoteJSON struct {
	ID          int64           `json:"id"`
	DealID      int64           `json:"deal_id"`
	QuoteNumber string          `json:"quote_number"`
	Status      string          `json:"status"`
	Currency    string          `json:"currency"`
	ValidUntil  *string         `json:"valid_until"`
	LineItems   []lineJSON      `json:"line_items"`
	Subtotal    string          `json:"subtotal"`
	TaxRate     json.RawMessage `json:"tax_rate"`
	Tax         string          `json:"tax"`
	Total       string          `json:"total"`
}

// stages returns the pipeline by name.
func (e *env) stages() map[string]stageJSON {
	e.t.Helper()
	var list []stageJSON
	e.data(e.do("GET", "/deal-stages", e.user, nil), http.StatusOK, &list)
	m := map[string]stageJSON{}
	for _, s := range list {
		m[s.Name] = s
	}
	return m
}

// createDeal creates a deal as the user and returns it.
func (e *env) createDeal(body map[string]any) dealJSON {
	e.t.Helper()
	var d dealJSON
	e.data(e.do("POST", "/deals", e.user, body), http.StatusCreated, &d)
	return d
}

func ptr[T any](v T) *T { return &v }

func path(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// TestMain keeps access logs out of test and benchmark output; warnings
// and errors still show.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(m.Run())
}
