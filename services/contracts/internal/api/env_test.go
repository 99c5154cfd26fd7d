package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/authtest"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/problem/problemtest"
	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/contracts/internal/api"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
	"github.com/opencrm/crm/services/contracts/internal/store"
)

const internalSecret = "test-internal-secret-0123456789"

// fakeDeals answers deals' merge data from a map: contracts reads it
// into its own projection, so the fake serves the rich shape contracts'
// templates need (dealsapitest's fake serves only the deal).
type fakeDeals struct {
	mu    sync.Mutex
	deals map[int64]map[string]any
	calls int
}

func (f *fakeDeals) set(id int64, merge map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deals[id] = merge
}

func (f *fakeDeals) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(auth.InternalHeader) != internalSecret {
		problem.Write(w, r, problem.Unauthenticated("internal route"))
		return
	}
	var id int64
	if _, err := fmt.Sscanf(r.URL.Path, dealsapi.PathDeals+"/%d/merge", &id); err != nil || r.Method != http.MethodGet {
		problem.Write(w, r, problem.NotFound("route"))
		return
	}
	f.mu.Lock()
	m, ok := f.deals[id]
	f.calls++
	f.mu.Unlock()
	if !ok {
		problem.Write(w, r, problem.NotFound("deal"))
		return
	}
	httpx.JSON(w, http.StatusOK, map[string]any{"data": m})
}

// mergeFor builds a realistic merge answer, shaped as deals sends it:
// money as strings with the currency's minor digits, quantity and tax rate
// as numbers.
func mergeFor(id int64, title, company string) map[string]any {
	return map[string]any{
		"deal": map[string]any{
			"id": id, "title": title, "value": "12500.50", "currency": "USD", "status": "won",
			"company_id": id * 10, "company_name": company, "expected_close_date": "2026-03-31",
		},
		"stage_name": "Negotiation",
		"owner_name": "Sam Seller",
		"company": map[string]any{
			"id": id * 10, "name": company, "address_street": "Hauptstraße 1", "address_city": "Berlin",
			"address_zip": "10115", "address_country": "Germany", "phone": nil,
		},
		"contact": map[string]any{"id": 7, "first_name": "Jane", "last_name": "Doe", "email": "jane@acme.example"},
		"quote": map[string]any{
			"id": 3, "quote_number": "Q-2026-00042", "status": "accepted", "currency": "USD",
			"line_items": []any{map[string]any{"description": "Licence <b>", "quantity": 10, "unit_price": "1000.00", "amount": "10000.00"}},
			"subtotal":   "10000.00", "tax_rate": 19, "tax": "1900.00", "total": "11900.00",
		},
	}
}

type env struct {
	srv         *httptest.Server
	iss         *authtest.Issuer
	admin, user string
	deals       *fakeDeals
	db          *db.DB
	svc         *contracts.Service
	prefix      string
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvAt(t, nil)
}

// newEnvAt is newEnv with the service's clock pinned to now (nil: time.Now).
func newEnvAt(t testing.TB, now func() time.Time) *env {
	t.Helper()
	d := testdb.New(t, store.Schema, store.Migrate, store.MigrationSets...)
	fd := &fakeDeals{deals: map[int64]map[string]any{}}
	dealsSrv := httptest.NewServer(fd)
	t.Cleanup(dealsSrv.Close)

	prefix := "test-contracts-" + randHex(6)
	rq, err := renderq.NewClient(renderq.Config{
		RedisURL: "redis://127.0.0.1:6379/0", Queues: renderq.Queues{Prefix: prefix}, Wait: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rq.Close() })
	svc, err := contracts.NewService(contracts.Deps{
		Store: store.New(d), Deals: dealsapi.New(dealsSrv.URL, internalSecret), Renderer: rq, Now: now,
	})
	if err != nil {
		t.Fatal(err)
	}
	iss := authtest.New(t)
	act, err := activity.New(activity.Config{DB: d, ParentType: activity.Contract, ParentName: "contract", ParentExists: svc.ContractExists})
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.New(svc, iss.Verifier(t), act, d)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := httpx.NewOps()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ops.Handler(h))
	t.Cleanup(srv.Close)
	return &env{srv: srv, iss: iss, admin: iss.Admin(t, 1), user: iss.User(t, 2), deals: fd, db: d, svc: svc, prefix: prefix}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not JSON (%d): %s", r.status, r.body)
	}
	return m
}

// data returns the "data" member as an object.
func (r response) data(t *testing.T) map[string]any {
	t.Helper()
	d, ok := r.json(t)["data"].(map[string]any)
	if !ok {
		t.Fatalf("no data object in %s", r.body)
	}
	return d
}

func (e *env) do(t *testing.T, method, path, token string, body any) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return e.send(t, req)
}

func (e *env) send(t *testing.T, req *http.Request) response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// wantProblem asserts a problem+json answer with status, code and (for
// 422) exactly the given error fields.
func wantProblem(t *testing.T, r response, status int, code string, fields ...string) {
	t.Helper()
	problemtest.Want(t, r.status, r.header, r.body, status, code, fields...)
}

const basicTemplate = `<h1>{{contract.title}}</h1><p>Between us and {{ Licensee.Company_Name }}, represented by {{licensee.contact_name}}.</p><p>Deal: {{deal.title}} worth {{deal.value}}.</p>{{quote.line_items}}<p>Number {{contract.number}} from {{contract.effective_date}} to {{contract.termination_date}}. Ref {{contract.partner_ref}}. Phone {{licensee.phone}}.</p>`

// createTemplate stores a template and returns its id.
func (e *env) createTemplate(t *testing.T, extra map[string]any) int64 {
	t.Helper()
	body := map[string]any{"name": "Standard licence", "content": basicTemplate,
		"header_left": "{{contract.number}}", "footer_center": "Page {{page}} of {{pages}}"}
	for k, v := range extra {
		body[k] = v
	}
	r := e.do(t, http.MethodPost, "/contract-templates", e.admin, body)
	if r.status != http.StatusCreated {
		t.Fatalf("create template: %d %s", r.status, r.body)
	}
	return int64(r.data(t)["id"].(float64))
}

// createContract creates a contract for deal from template.
func (e *env) createContract(t *testing.T, dealID, templateID int64, extra map[string]any) map[string]any {
	t.Helper()
	body := map[string]any{"deal_id": dealID, "template_id": templateID, "title": "Licence agreement"}
	for k, v := range extra {
		body[k] = v
	}
	r := e.do(t, http.MethodPost, "/contracts", e.user, body)
	if r.status != http.StatusCreated {
		t.Fatalf("create contract: %d %s", r.status, r.body)
	}
	return r.data(t)
}

func idOf(m map[string]any) int64 { return int64(m["id"].(float64)) }

func dealsDownClient(url string) contracts.Deals { return dealsapi.New(url, internalSecret) }

// noRenderer is a renderer that is never reached in the tests using it.
type noRenderer struct{}

func (noRenderer) Render(context.Context, renderq.Job, renderq.Priority, string) ([]byte, error) {
	return nil, &renderq.UnavailableError{Reason: renderq.NoWorker, RetryAfter: time.Second}
}

func mustActivity(t *testing.T, e *env) *activity.Handlers {
	t.Helper()
	act, err := activity.New(activity.Config{DB: e.db, ParentType: activity.Contract, ParentName: "contract", ParentExists: e.svc.ContractExists})
	if err != nil {
		t.Fatal(err)
	}
	return act
}
