package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi/privacyapitest"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/services/identity/internal/api"
	"github.com/opencrm/crm/services/identity/internal/identity"
	"github.com/opencrm/crm/services/identity/internal/store"
)

// privacyEnv is env with the privacy routes served over a fake per
// context.
type privacyEnv struct {
	*env
	p     *identity.Privacy
	fakes map[string]*privacyapitest.Fake
}

func newPrivacyEnv(t *testing.T) *privacyEnv {
	t.Helper()
	e := newEnv(t, options{})
	pe := &privacyEnv{env: e, fakes: map[string]*privacyapitest.Fake{}}
	parts := map[string]identity.PrivacyPart{}
	for _, c := range privacyapi.Contexts {
		f := privacyapitest.New(t, c, internalSecret)
		pe.fakes[c], parts[c] = f, f.Client()
	}
	cfg := identity.DefaultPrivacyConfig()
	cfg.HashKey, cfg.RetryBase, cfg.RetryMax = []byte(strings.Repeat("h", 32)), 0, 0
	p, err := identity.NewPrivacy(store.New(e.db), parts, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	pe.p = p
	proxies, err := api.ParseTrustedProxies("")
	if err != nil {
		t.Fatal(err)
	}
	a, err := api.New(e.svc, e.verifier(), internalSecret, proxies)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := httpx.NewOps()
	if err != nil {
		t.Fatal(err)
	}
	e.h = ops.Handler(a.WithPrivacy(p).Routes())
	return pe
}

// run works the due requests.
func (e *privacyEnv) run() {
	e.t.Helper()
	for range 10 {
		n, err := e.p.RunOnce(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

type erasureOut = envelope[privacyapi.Erasure]
type exportOut = envelope[privacyapi.Export]

func (e *privacyEnv) erase(email string) privacyapi.Erasure {
	e.t.Helper()
	var out erasureOut
	decode(e.t, e.do(req{method: "POST", path: "/privacy/erasures", token: e.admin,
		body: mustJSON(privacyapi.ErasureRequest{Email: email, Reason: "asked by mail"})}), http.StatusAccepted, &out)
	if !out.Success || out.Message != privacyapi.CreateErasure.Message {
		e.t.Fatalf("erasure answer %+v", out)
	}
	return out.Data
}

func (e *privacyEnv) export(email string) privacyapi.Export {
	e.t.Helper()
	var out exportOut
	decode(e.t, e.do(req{method: "POST", path: "/privacy/exports", token: e.admin,
		body: mustJSON(privacyapi.ExportRequest{Email: email})}), http.StatusAccepted, &out)
	if !out.Success || out.Message != privacyapi.CreateExport.Message {
		e.t.Fatalf("export answer %+v", out)
	}
	return out.Data
}

// TestPrivacyRoutesMounted: the privacy routes are served at their paths
// behind the admin policy.
func TestPrivacyRoutesMounted(t *testing.T) {
	t.Parallel()
	e := newPrivacyEnv(t)
	for _, r := range privacyapi.Routes {
		if r.Auth != route.Admin || r.Service != "identity" {
			t.Errorf("%s: auth %s service %s", r.Pattern(), r.Auth, r.Service)
		}
		rec := e.do(req{method: r.Method, path: strings.ReplaceAll(r.Path, "{id}", "1")})
		wantProblem(t, rec, http.StatusUnauthorized, "unauthenticated")
	}
}

// TestPrivacyFlow: an erasure answers 202 pending with a pending receipt
// per context, the same erasure for the address again; GET follows it to
// completed with each context's receipt; an export runs and answers its
// document until the person's erasure deletes it.
func TestPrivacyFlow(t *testing.T) {
	t.Parallel()
	e := newPrivacyEnv(t)
	e.fakes[privacyapi.Contacts].Answer(
		privacyapi.ExportPart{Found: privacyapi.Found{ContactIDs: []int64{4}}, Data: []byte(`{"contacts":[{"id":4}]}`)},
		privacyapi.ErasePart{Found: privacyapi.Found{ContactIDs: []int64{4}}, Receipt: privacyapi.Receipt{Erased: map[string]int64{"contacts": 1}}})

	x := e.export("flow@example.com")
	if x.Status != privacyapi.StatusPending || x.Document != nil || x.CompletedAt != nil {
		t.Fatalf("export %+v", x)
	}
	e.run()
	var got exportOut
	decode(t, e.do(req{method: "GET", path: "/privacy/exports/" + strconv.FormatInt(x.ID, 10), token: e.admin}), 200, &got)
	if got.Data.Status != privacyapi.StatusCompleted || got.Data.Document == nil ||
		string(got.Data.Document.Contexts["contacts"]) != `{"contacts":[{"id":4}]}` || got.Data.Document.Email != "flow@example.com" {
		t.Fatalf("completed export %+v", got.Data)
	}

	er := e.erase("flow@example.com")
	pending := make([]privacyapi.Receipt, len(privacyapi.Contexts))
	for i, c := range privacyapi.Contexts {
		pending[i] = privacyapi.Receipt{Context: c, Status: privacyapi.StatusPending, Erased: map[string]int64{},
			Redacted: map[string]int64{}, Kept: []privacyapi.Kept{}}
	}
	want := privacyapi.Erasure{ID: er.ID, Status: privacyapi.StatusPending, Reason: "asked by mail", Receipts: pending}
	if diff := cmp.Diff(want, er, cmpopts.IgnoreFields(privacyapi.Erasure{}, "RequestedAt")); diff != "" {
		t.Errorf("erasure (-want +got):\n%s", diff)
	}
	if again := e.erase(" FLOW@example.com"); again.ID != er.ID {
		t.Errorf("second request: erasure %d, want %d", again.ID, er.ID)
	}
	e.run()
	var done erasureOut
	decode(t, e.do(req{method: "GET", path: "/privacy/erasures/" + strconv.FormatInt(er.ID, 10), token: e.admin}), 200, &done)
	completed := make([]privacyapi.Receipt, len(privacyapi.Contexts))
	for i, c := range privacyapi.Contexts {
		completed[i] = privacyapi.Receipt{Context: c, Status: privacyapi.StatusCompleted, Erased: map[string]int64{},
			Redacted: map[string]int64{}, Kept: []privacyapi.Kept{}}
	}
	completed[0].Erased = map[string]int64{"contacts": 1}
	if diff := cmp.Diff(completed, done.Data.Receipts); diff != "" || done.Data.Status != privacyapi.StatusCompleted || done.Data.CompletedAt == nil {
		t.Errorf("completed erasure %+v (-want +got receipts):\n%s", done.Data, diff)
	}
	if again := e.erase("flow@example.com"); again.ID != er.ID || again.Status != privacyapi.StatusCompleted {
		t.Errorf("request after completion: %+v, want erasure %d completed", again, er.ID)
	}
	rec := e.do(req{method: "GET", path: "/privacy/exports/" + strconv.FormatInt(x.ID, 10), token: e.admin})
	wantNotFound(t, rec, "export not found")
}

func wantNotFound(t *testing.T, rec *httptest.ResponseRecorder, detail string) {
	t.Helper()
	got := wantProblem(t, rec, http.StatusNotFound, "not_found")
	want := problem.Body{Type: "/docs/problems#not_found", Title: "Not Found", Status: 404, Code: "not_found", Detail: detail}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(problem.Body{}, "RequestID")); diff != "" {
		t.Errorf("404 (-want +got):\n%s", diff)
	}
}

// TestPrivacyBadInput: every refusal's exact problem: a bad address
// (422 naming email), a reason too long, a body that is not JSON, a
// caller without the admin role (403), an unknown id (404), an export
// while the person's erasure runs (409 erasure_running).
func TestPrivacyBadInput(t *testing.T) {
	t.Parallel()
	e := newPrivacyEnv(t)
	email := uniqueEmail("plain")
	e.createUser("Plain User", email, "plain-password-1", "user", nil)
	user := e.login(email, "plain-password-1").AccessToken
	ignore := cmpopts.IgnoreFields(problem.Body{}, "RequestID")
	invalid := func(field, msg string) problem.Body {
		return problem.Body{Type: "/docs/problems#validation_failed", Title: "Unprocessable Entity", Status: 422,
			Code: "validation_failed", Detail: "one or more fields are invalid",
			Errors: []problem.FieldError{{Field: field, Message: msg}}}
	}
	forbidden := problem.Body{Type: "/docs/problems#forbidden", Title: "Forbidden", Status: 403, Code: "forbidden",
		Detail: "this action requires the admin role"}
	notFound := func(what string) problem.Body {
		return problem.Body{Type: "/docs/problems#not_found", Title: "Not Found", Status: 404, Code: "not_found",
			Detail: what + " not found"}
	}
	e.fakes[privacyapi.Contacts].Down(true)
	running := e.erase("running@example.com")
	e.run()

	tests := []struct {
		name, method, path, token, body string
		want                            problem.Body
	}{
		{"export without email", "POST", "/privacy/exports", e.admin, `{}`, invalid("email", "is required")},
		{"export empty email", "POST", "/privacy/exports", e.admin, `{"email":" "}`, invalid("email", "is required")},
		{"export not an email", "POST", "/privacy/exports", e.admin, `{"email":"ann"}`, invalid("email", "must be a valid email address")},
		{"erasure without email", "POST", "/privacy/erasures", e.admin, `{"reason":"x"}`, invalid("email", "is required")},
		{"erasure not an email", "POST", "/privacy/erasures", e.admin, `{"email":"ann@","reason":"x"}`, invalid("email", "must be a valid email address")},
		{"erasure without reason", "POST", "/privacy/erasures", e.admin, `{"email":"ann@example.com"}`, invalid("reason", "is required")},
		{"erasure long reason", "POST", "/privacy/erasures", e.admin, `{"email":"ann@example.com","reason":"` + strings.Repeat("r", 256) + `"}`,
			invalid("reason", "must be at most 255 characters")},
		{"export as a user", "POST", "/privacy/exports", user, `{"email":"ann@example.com"}`, forbidden},
		{"erasure as a user", "POST", "/privacy/erasures", user, `{"email":"ann@example.com","reason":"x"}`, forbidden},
		{"export read as a user", "GET", "/privacy/exports/1", user, "", forbidden},
		{"erasure read as a user", "GET", "/privacy/erasures/" + strconv.FormatInt(running.ID, 10), user, "", forbidden},
		{"unknown export", "GET", "/privacy/exports/999999", e.admin, "", notFound("export")},
		{"unknown erasure", "GET", "/privacy/erasures/999999", e.admin, "", notFound("erasure")},
		{"export id not a number", "GET", "/privacy/exports/abc", e.admin, "", notFound("")},
		{"export while erasing", "POST", "/privacy/exports", e.admin, `{"email":"Running@Example.com"}`,
			problem.Body{Type: "/docs/problems#erasure_running", Title: "Conflict", Status: 409, Code: "erasure_running",
				Detail: "an erasure of this person is running; export after it completed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := e.do(req{method: tt.method, path: tt.path, token: tt.token, body: tt.body})
			var fields []string
			for _, f := range tt.want.Errors {
				fields = append(fields, f.Field)
			}
			got := wantProblem(t, rec, tt.want.Status, tt.want.Code, fields...)
			want := tt.want
			if want.Detail == " not found" {
				want.Detail = got.Detail // the id parser's own words
			}
			if diff := cmp.Diff(want, got, ignore); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestPrivacyTokenScope: an integration token needs the admin scope
// (and the admin role), here as at the gateway.
func TestPrivacyTokenScope(t *testing.T) {
	t.Parallel()
	e := newPrivacyEnv(t)
	mint := func(body string) string {
		var v envelope[verifiedOut]
		decode(t, e.verifyToken(e.createToken(body).Token), 200, &v)
		return v.Data.AccessToken
	}
	reader := mint(`{"name":"admin reader","role":"admin","scopes":["contacts:read"]}`)
	admin := mint(`{"name":"privacy officer","role":"admin","scopes":["admin"]}`)
	body := mustJSON(privacyapi.ErasureRequest{Email: "scoped@example.com", Reason: "asked"})
	got := wantProblem(t, e.do(req{method: "POST", path: "/privacy/erasures", token: reader, body: body}), 403, "insufficient_scope")
	want := problem.Body{Type: "/docs/problems#insufficient_scope", Title: "Forbidden", Status: 403, Code: "insufficient_scope",
		Detail: "this access token lacks the admin scope"}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(problem.Body{}, "RequestID")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	wantProblem(t, e.do(req{method: "GET", path: "/privacy/erasures/1", token: reader}), 403, "insufficient_scope")
	var out erasureOut
	decode(t, e.do(req{method: "POST", path: "/privacy/erasures", token: admin, body: body}), http.StatusAccepted, &out)
	decode(t, e.do(req{method: "GET", path: "/privacy/erasures/" + strconv.FormatInt(out.Data.ID, 10), token: admin}), 200, nil)
}

// TestPrivacyConcurrentErasures: requests for one address at once make
// one erasure, which every answer names.
func TestPrivacyConcurrentErasures(t *testing.T) {
	t.Parallel()
	e := newPrivacyEnv(t)
	const n = 10
	ids := make([]int64, n)
	statuses := make([]int, n)
	concurrently(n, func(i int) {
		rec := e.do(req{method: "POST", path: "/privacy/erasures", token: e.admin,
			body: mustJSON(privacyapi.ErasureRequest{Email: []string{"once@example.com", "ONCE@example.com"}[i%2], Reason: "asked"})})
		statuses[i] = rec.Code
		var out erasureOut
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
		ids[i] = out.Data.ID
	})
	for i := range n {
		if statuses[i] != http.StatusAccepted || ids[i] == 0 || ids[i] != ids[0] {
			t.Fatalf("answers %v ids %v: want ten 202s naming one erasure", statuses, ids)
		}
	}
	var rows int
	if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM privacy_erasures`).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("%d erasures stored (%v), want 1", rows, err)
	}
}
