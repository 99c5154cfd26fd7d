package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/authtest"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/contracts/internal/api"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
	"github.com/opencrm/crm/services/contracts/internal/store"
)

// newPrivacyEnv is newEnv serving contracts' privacy part too, as the
// binary does (no render worker: nothing here renders).
func newPrivacyEnv(t *testing.T) *env {
	t.Helper()
	d := testdb.New(t, store.Schema, store.Migrate, store.MigrationSets...)
	fd := &fakeDeals{deals: map[int64]map[string]any{}}
	dealsSrv := httptest.NewServer(fd)
	t.Cleanup(dealsSrv.Close)
	svc, err := contracts.NewService(contracts.Deps{
		Store: store.New(d), Deals: dealsapi.New(dealsSrv.URL, internalSecret), Renderer: noRenderer{},
	})
	if err != nil {
		t.Fatal(err)
	}
	iss := authtest.New(t)
	e := &env{iss: iss, admin: iss.Admin(t, 1), user: iss.User(t, 2), deals: fd, db: d, svc: svc}
	part, err := store.NewPrivacy(d)
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.New(svc, iss.Verifier(t), mustActivity(t, e), d,
		api.Privacy{InternalSecret: internalSecret, DB: d, Part: part})
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

// internal sends an internal call, with the secret unless secret is "".
func (e *env) internal(t *testing.T, path, secret string, body any) response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set(auth.InternalHeader, secret)
	}
	return e.send(t, req)
}

// TestPrivacyRoutes: the internal privacy routes take the internal
// secret and a subject with an address; the export lists the contracts
// of the subject's deals; an erasure deletes the unsigned ones once: the
// same erasure id again answers the same receipt and changes nothing,
// and another deal's contract stays.
func TestPrivacyRoutes(t *testing.T) {
	t.Parallel()
	e := newPrivacyEnv(t)
	ctx := context.Background()
	e.deals.set(100, mergeFor(100, "Ann's deal", "Acme"))
	e.deals.set(200, mergeFor(200, "Carl's deal", "Globex"))
	tpl := e.createTemplate(t, nil)
	mine := idOf(e.createContract(t, 100, tpl, nil))
	theirs := idOf(e.createContract(t, 200, tpl, nil))
	subject := privacyapi.Subject{Email: "jane@acme.example", ContactIDs: []int64{7}, DealIDs: []int64{100}}

	invalid := `{"type":"/docs/problems#validation_failed","title":"Unprocessable Entity","status":422,"detail":"one or more fields are invalid","code":"validation_failed","errors":[{"field":"email","message":"is required"}]}`
	for _, c := range []struct {
		name   string
		path   string
		secret string
		body   any
		status int
		want   string
	}{
		{"empty email", privacyapi.PathExport, internalSecret, map[string]any{"email": ""}, 422, invalid},
		{"blank email on an erasure", privacyapi.ErasurePath(1), internalSecret, map[string]any{"email": " ", "deal_ids": []int64{100}}, 422, invalid},
		{"no secret", privacyapi.PathExport, "", subject, 401,
			`{"type":"/docs/problems#unauthenticated","title":"Unauthorized","status":401,"detail":"internal route","code":"unauthenticated"}`},
		{"wrong secret", privacyapi.ErasurePath(1), "not-the-secret-at-all", subject, 401,
			`{"type":"/docs/problems#unauthenticated","title":"Unauthorized","status":401,"detail":"internal route","code":"unauthenticated"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.internal(t, c.path, c.secret, c.body)
			if r.status != c.status || r.header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("%d %s %s, want %d problem+json", r.status, r.header.Get("Content-Type"), r.body, c.status)
			}
			got := r.json(t)
			delete(got, "request_id")
			var want map[string]any
			if err := json.Unmarshal([]byte(c.want), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
	// Nothing was erased by a refused call.
	if _, err := e.svc.GetContract(ctx, mine); err != nil {
		t.Fatalf("contract %d after the refusals: %v", mine, err)
	}

	r := e.internal(t, privacyapi.PathExport, internalSecret, subject)
	if r.status != http.StatusOK {
		t.Fatalf("export: %d %s", r.status, r.body)
	}
	var export struct {
		Data privacyapi.ExportPart `json:"data"`
	}
	if err := json.Unmarshal(r.body, &export); err != nil {
		t.Fatal(err)
	}
	var doc map[string][]store.ContractRef
	if err := json.Unmarshal(export.Data.Data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc["contracts"]) != 1 || doc["contracts"][0].ID != mine || doc["contracts"][0].Executed {
		t.Errorf("export = %s, want contract %d alone, not executed", export.Data.Data, mine)
	}

	first := e.internal(t, privacyapi.ErasurePath(4), internalSecret, subject)
	if first.status != http.StatusOK {
		t.Fatalf("erasure: %d %s", first.status, first.body)
	}
	var got struct {
		Data privacyapi.ErasePart `json:"data"`
	}
	if err := json.Unmarshal(first.body, &got); err != nil {
		t.Fatal(err)
	}
	want := privacyapi.ErasePart{Receipt: privacyapi.Receipt{Context: privacyapi.Contracts, Status: privacyapi.StatusCompleted,
		Erased: map[string]int64{"contracts": 1, "notes": 0, "tasks": 0}, Redacted: map[string]int64{"history": 2}, Kept: []privacyapi.Kept{}}}
	if diff := cmp.Diff(want, got.Data); diff != "" {
		t.Errorf("erasure (-want +got):\n%s", diff)
	}
	if g := e.do(t, http.MethodGet, "/contracts/"+strconv.FormatInt(mine, 10), e.admin, nil); g.status != http.StatusNotFound {
		t.Errorf("GET of the erased contract: %d", g.status)
	}
	var outbox, history int
	if err := e.db.QueryRow(ctx, `SELECT (SELECT count(*) FROM outbox), (SELECT count(*) FROM history)`).Scan(&outbox, &history); err != nil {
		t.Fatal(err)
	}

	again := e.internal(t, privacyapi.ErasurePath(4), internalSecret, subject)
	if again.status != http.StatusOK || string(again.body) != string(first.body) {
		t.Errorf("repeated erasure: %d %s, want %s", again.status, again.body, first.body)
	}
	var outboxAgain, historyAgain int
	if err := e.db.QueryRow(ctx, `SELECT (SELECT count(*) FROM outbox), (SELECT count(*) FROM history)`).Scan(&outboxAgain, &historyAgain); err != nil {
		t.Fatal(err)
	}
	if outboxAgain != outbox || historyAgain != history {
		t.Errorf("the repeated erasure wrote: outbox %d → %d, history %d → %d", outbox, outboxAgain, history, historyAgain)
	}
	if _, err := e.svc.GetContract(ctx, theirs); err != nil {
		t.Errorf("another deal's contract: %v", err)
	}
}
