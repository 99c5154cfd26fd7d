package privacyhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/privacy"
	"github.com/opencrm/crm/pkg/privacy/privacyhttp"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/testdb"
)

const secret = "privacy-mount-secret-0123456789"

// people is the test context's table of personal data.
const people = `CREATE TABLE IF NOT EXISTS people (id bigserial PRIMARY KEY, email text NOT NULL)`

func newDB(t *testing.T) *db.DB {
	t.Helper()
	return testdb.New(t, "privacytest", func(ctx context.Context, d *db.DB) error {
		if err := idempotency.Migrate(ctx, d); err != nil {
			return err
		}
		_, err := d.Exec(ctx, people)
		return err
	}, idempotency.Migrations)
}

// part is a context holding people by address: Erase deletes them in the
// transaction it is given; it counts its calls and can fail once.
type part struct {
	mu      sync.Mutex
	erases  int
	exports []privacyapi.Subject
	actors  []historyapi.HistoryActor
	failing bool
}

func (p *part) Export(ctx context.Context, s privacyapi.Subject) (privacyapi.ExportPart, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.exports = append(p.exports, s)
	return privacyapi.ExportPart{Found: privacyapi.Found{ContactIDs: []int64{1}}, Data: json.RawMessage(`{"people":1}`)}, nil
}

func (p *part) Erase(ctx context.Context, tx pgx.Tx, s privacyapi.Subject) (privacyapi.ErasePart, error) {
	p.mu.Lock()
	p.erases++
	failing := p.failing
	p.failing = false
	if a, ok := history.ActorOf(ctx); ok {
		p.actors = append(p.actors, a)
	}
	p.mu.Unlock()
	tag, err := tx.Exec(ctx, `DELETE FROM people WHERE lower(email) = lower($1)`, s.Email)
	if err != nil {
		return privacyapi.ErasePart{}, err
	}
	if failing {
		// The deletion above must roll back with the failure.
		return privacyapi.ErasePart{}, errors.New("erase failed")
	}
	return privacyapi.ErasePart{Receipt: privacyapi.Receipt{Erased: map[string]int64{"people": tag.RowsAffected()}}}, nil
}

func (p *part) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.erases
}

func serve(t *testing.T, d *db.DB, p privacy.Part) http.Handler {
	t.Helper()
	mux := http.NewServeMux()
	privacyhttp.Mount(mux, history.Internal(auth.RequireInternal(secret)), d, "people", p)
	return httpx.Routes(mux)
}

func post(h http.Handler, path, body string, header map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(auth.InternalHeader, secret)
	for k, v := range header {
		r.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func problemOf(t *testing.T, rec *httptest.ResponseRecorder) problem.Body {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != problem.ContentType {
		t.Fatalf("content type %q; body %s", ct, rec.Body)
	}
	var b problem.Body
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMountBadSubject: every bad subject is a 422 naming its field, on
// both routes; a bad erasure id is a 404; no secret a 401.
func TestMountBadSubject(t *testing.T) {
	t.Parallel()
	h := serve(t, newDB(t), &part{})
	invalid := func(fields ...problem.FieldError) problem.Body {
		return problem.Body{Type: "/docs/problems#validation_failed", Title: "Unprocessable Entity", Status: 422,
			Code: "validation_failed", Detail: "one or more fields are invalid", Errors: fields}
	}
	many := make([]int64, 10001)
	for i := range many {
		many[i] = int64(i + 1)
	}
	manyJSON, _ := json.Marshal(map[string]any{"email": "a@example.com", "deal_ids": many})
	tests := []struct {
		name, body string
		want       problem.Body
	}{
		{"no email", `{}`, invalid(problem.FieldError{Field: "email", Message: "is required"})},
		{"blank email", `{"email":"  "}`, invalid(problem.FieldError{Field: "email", Message: "is required"})},
		{"email too long", `{"email":"` + strings.Repeat("a", 256) + `"}`,
			invalid(problem.FieldError{Field: "email", Message: "must be at most 255 characters"})},
		{"ids not positive", `{"email":"a@example.com","contact_ids":[3,0],"lead_ids":[-1]}`,
			invalid(problem.FieldError{Field: "contact_ids", Message: "must hold positive ids"},
				problem.FieldError{Field: "lead_ids", Message: "must hold positive ids"})},
		{"too many ids", string(manyJSON), invalid(problem.FieldError{Field: "deal_ids", Message: "must hold at most 10000 ids"})},
	}
	for _, tt := range tests {
		for _, path := range []string{privacyapi.PathExport, privacyapi.ErasurePath(1)} {
			t.Run(tt.name+" "+path, func(t *testing.T) {
				t.Parallel()
				rec := post(h, path, tt.body, nil)
				if rec.Code != http.StatusUnprocessableEntity {
					t.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				if diff := cmp.Diff(tt.want, problemOf(t, rec), cmpopts.IgnoreFields(problem.Body{}, "RequestID")); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			})
		}
	}
	t.Run("erasure id", func(t *testing.T) {
		t.Parallel()
		for _, id := range []string{"abc", "0", "-3"} {
			if rec := post(h, privacyapi.PathErasures+"/"+id, `{"email":"a@example.com"}`, nil); rec.Code != http.StatusNotFound {
				t.Errorf("id %s: status %d, want 404", id, rec.Code)
			}
		}
	})
	t.Run("no secret", func(t *testing.T) {
		t.Parallel()
		rec := post(h, privacyapi.PathExport, `{"email":"a@example.com"}`, map[string]string{auth.InternalHeader: "wrong"})
		if b := problemOf(t, rec); rec.Code != http.StatusUnauthorized || b.Code != "unauthenticated" {
			t.Errorf("status %d %+v, want 401", rec.Code, b)
		}
	})
}

// TestMountErasesOnce: an erasure id runs the part once, in the
// transaction that stores its answer: a repeat answers the stored part
// without calling the part, another subject under the id is refused, a
// failed run leaves nothing (its deletions rolled back) and runs again,
// and another id runs anew. The part acts for the actor the caller named.
func TestMountErasesOnce(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	if _, err := d.Exec(context.Background(), `INSERT INTO people (email) VALUES ('ann@example.com'), ('ANN@example.com'), ('bob@example.com')`); err != nil {
		t.Fatal(err)
	}
	p := &part{failing: true}
	h := serve(t, d, p)
	actor := map[string]string{history.ActorHeader: `{"type":"user","id":7,"name":"Ann Admin"}`}
	body := `{"email":" Ann@Example.com "}`

	if rec := post(h, privacyapi.ErasurePath(5), body, actor); rec.Code != http.StatusInternalServerError {
		t.Fatalf("failing part: %d %s", rec.Code, rec.Body)
	}
	var left int
	if err := d.QueryRow(context.Background(), `SELECT count(*) FROM people`).Scan(&left); err != nil || left != 3 {
		t.Fatalf("after a failed erasure %d people (%v), want 3", left, err)
	}
	want := `{"data":{"receipt":{"context":"people","status":"completed","erased":{"people":2},"redacted":{},"kept":[]}}}`
	for i := range 3 {
		rec := post(h, privacyapi.ErasurePath(5), body, actor)
		if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != want {
			t.Fatalf("call %d: %d %s, want %s", i, rec.Code, rec.Body, want)
		}
	}
	if n := p.count(); n != 2 {
		t.Errorf("part called %d times, want 2 (one failed, one run)", n)
	}
	// The answer is fingerprinted by the ids asked about, never the
	// address: other ids under the id are refused, another address with
	// the same ids answers the stored part.
	rec := post(h, privacyapi.ErasurePath(5), `{"email":"ann@example.com","contact_ids":[3]}`, actor)
	reused := problem.Body{Type: "/docs/problems#erasure_reused", Title: "Conflict", Status: 409, Code: "erasure_reused",
		Detail: "this erasure was asked about other records before"}
	if diff := cmp.Diff(reused, problemOf(t, rec), cmpopts.IgnoreFields(problem.Body{}, "RequestID")); rec.Code != http.StatusConflict || diff != "" {
		t.Errorf("other ids under the id: %d (-want +got):\n%s", rec.Code, diff)
	}
	if rec := post(h, privacyapi.ErasurePath(5), `{"email":"bob@example.com"}`, actor); rec.Code != 200 ||
		strings.TrimSpace(rec.Body.String()) != want {
		t.Errorf("another address under the id: %d %s, want the stored part", rec.Code, rec.Body)
	}
	var stored string
	if err := d.QueryRow(context.Background(), `SELECT result::text FROM idempotency_keys WHERE key = $1`,
		privacyapi.ErasureKey(5)).Scan(&stored); err != nil || strings.Contains(strings.ToLower(stored), "ann@") {
		t.Errorf("stored answer %s (%v) names the address", stored, err)
	}
	rec = post(h, privacyapi.ErasurePath(6), body, actor)
	if want := `{"data":{"receipt":{"context":"people","status":"completed","erased":{"people":0},"redacted":{},"kept":[]}}}`; rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != want {
		t.Errorf("another erasure: %d %s, want %s", rec.Code, rec.Body, want)
	}
	if err := d.QueryRow(context.Background(), `SELECT count(*) FROM people`).Scan(&left); err != nil || left != 1 {
		t.Errorf("%d people left (%v), want bob alone", left, err)
	}
	id := int64(7)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.actors {
		if diff := cmp.Diff(historyapi.HistoryActor{Type: "user", ID: &id, Name: "Ann Admin"}, a); diff != "" {
			t.Errorf("actor (-want +got):\n%s", diff)
		}
	}

	// Erase, the function, answers the stored part too.
	got, err := privacy.Erase(context.Background(), d, "people", 5, privacyapi.Subject{Email: "Ann@Example.com"}, p)
	if err != nil || got.Receipt.Erased["people"] != 2 {
		t.Errorf("Erase after the route: %+v, %v", got, err)
	}
}

// TestMountExport: an export answers the part's data for the trimmed
// subject.
func TestMountExport(t *testing.T) {
	t.Parallel()
	p := &part{}
	h := serve(t, newDB(t), p)
	rec := post(h, privacyapi.PathExport, `{"email":" ann@example.com ","lead_ids":[4]}`, nil)
	if want := `{"data":{"contact_ids":[1],"data":{"people":1}}}`; rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != want {
		t.Errorf("export: %d %s, want %s", rec.Code, rec.Body, want)
	}
	if diff := cmp.Diff([]privacyapi.Subject{{Email: "ann@example.com", LeadIDs: []int64{4}}}, p.exports); diff != "" {
		t.Errorf("subjects (-want +got):\n%s", diff)
	}
}
