package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/authtest"
	"github.com/opencrm/crm/pkg/contract/identityapi/identityapitest"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem/problemtest"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/contacts/internal/api"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
	"github.com/opencrm/crm/services/contacts/internal/store"
)

const secret = "test-internal-secret-0123456789"

// Users of the read model every env starts with.
const (
	adminID  = 1 // team 10
	userID   = 2 // team 10
	otherID  = 3 // team 20
	loneID   = 4 // no team
	unknownU = 999
)

type env struct {
	t       testing.TB
	db      *db.DB
	store   *store.Store
	h       http.Handler
	iss     *authtest.Issuer
	admin   string
	user    string
	other   string
	teamTen int64
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvWith(t, nil)
}

// newEnvWith is newEnv with the API's configuration changed by with.
func newEnvWith(t testing.TB, with func(*api.Config)) *env {
	t.Helper()
	d := testdb.New(t, store.Schema, store.Migrate, store.MigrationSets...)
	iss := authtest.New(t)
	_, idc := identityapitest.NewFake(secret).Start(t)
	users, err := directory.NewUsers(d, idc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(d, users)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := contacts.NewService(st)
	if err != nil {
		t.Fatal(err)
	}
	cfg := api.Config{Service: svc, DB: d, Verifier: iss.Verifier(t), InternalSecret: secret,
		Now: func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }}
	if with != nil {
		with(&cfg)
	}
	h, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ten, twenty := int64(10), int64(20)
	now := time.Now()
	for _, u := range []directory.User{
		{ID: adminID, Name: "Ada Admin", Email: "ada@crm.test", Role: "admin", TeamID: &ten, Active: true, UpdatedAt: now},
		{ID: userID, Name: "Uma User", Email: "uma@crm.test", Role: "user", TeamID: &ten, Active: true, UpdatedAt: now},
		{ID: otherID, Name: "Otto Other", Email: "otto@crm.test", Role: "user", TeamID: &twenty, Active: true, UpdatedAt: now},
		{ID: loneID, Name: "Lone Wolf", Email: "lone@crm.test", Role: "user", Active: true, UpdatedAt: now},
	} {
		if err := directory.Upsert(context.Background(), d, u); err != nil {
			t.Fatal(err)
		}
	}
	return &env{t: t, db: d, store: st, h: httpx.Chain(h, httpx.RequestID), iss: iss,
		admin: iss.Token(t, adminID, "admin", &ten), user: iss.Token(t, userID, "user", &ten),
		other: iss.Token(t, otherID, "user", &twenty), teamTen: ten}
}

type resp struct {
	Status int
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

func (e *env) serve(t testing.TB, req *http.Request) resp {
	t.Helper()
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	r := resp{Status: rec.Code, Header: rec.Header(), Raw: rec.Body.Bytes()}
	if strings.Contains(rec.Header().Get("Content-Type"), "json") {
		if err := json.Unmarshal(r.Raw, &r.Body); err != nil {
			t.Fatalf("decode %s: %v", r.Raw, err)
		}
	}
	return r
}

// do sends a JSON request with a bearer token ("" for none).
func (e *env) do(t testing.TB, method, path, token string, body any) resp {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return e.serve(t, req)
}

// internal sends an internal API request with the secret and a key.
func (e *env) internal(t testing.TB, method, path, key string, body any) resp {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Internal-Token", secret)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	return e.serve(t, req)
}

// upload posts a multipart form with the file in field (name "" = no file part).
func (e *env) upload(t testing.TB, token, field, filename string, content []byte) resp {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if field != "" {
		fw, err := mw.CreateFormFile(field, filename)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(content)
	} else {
		_ = mw.WriteField("other", "x")
	}
	_ = mw.Close()
	req := httptest.NewRequest(http.MethodPost, "/contacts/import", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	return e.serve(t, req)
}

// wantStatus fails unless r has the status.
func wantStatus(t testing.TB, r resp, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
}

// wantProblem checks a problem+json answer with problemtest.Want (status,
// code and, for 422, the invalid fields) and that it carries a request_id.
func wantProblem(t testing.TB, r resp, status int, code string, fields ...string) {
	t.Helper()
	problemtest.Want(t, r.Status, r.Header, r.Raw, status, code, fields...)
	if _, ok := r.Body["request_id"]; !ok {
		t.Errorf("problem without request_id: %v", r.Body)
	}
}

func dataOf(t testing.TB, r resp) map[string]any {
	t.Helper()
	d, ok := r.Body["data"].(map[string]any)
	if !ok {
		t.Fatalf("no data object in %s", r.Raw)
	}
	return d
}

func id(t testing.TB, r resp) int64 {
	t.Helper()
	return int64(dataOf(t, r)["id"].(float64))
}

func (e *env) count(t testing.TB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
