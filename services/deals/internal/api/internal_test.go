package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/outbox"
)

// TestInternalCreateReplaysAnswersStoredBeforeOnce: a key stored as an
// HTTP answer (by idempotency.Run, before deals kept the typed deal) still
// replays that deal to a retry across the upgrade.
func TestInternalCreateReplaysAnswersStoredBeforeOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := []byte(`{"title":"Stored before","value":"12","currency":"JPY","company_id":100}`)
	var stored struct {
		Data json.RawMessage `json:"data"`
	}
	r := e.do("POST", "/deals", e.user, map[string]any{"title": "Stored before", "value": "1250.5", "currency": "KWD"})
	if err := json.Unmarshal(r.Body, &stored); err != nil || r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	// The row as idempotency.Run wrote it: the hash of the decoded body's
	// JSON, the status and the answer's bytes.
	var in dealsapi.DealInput
	if err := json.Unmarshal(body, &in); err != nil {
		t.Fatal(err)
	}
	request, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := json.Marshal(map[string]any{"success": true, "data": stored.Data, "message": "Deal created"})
	if err != nil {
		t.Fatal(err)
	}
	hash := sha256.Sum256(request)
	if _, err := e.db.Exec(context.Background(), `INSERT INTO idempotency_keys (key, request_hash, status, response)
		VALUES ($1, $2, $3, $4)`, "before-once", hash[:], http.StatusCreated, answer); err != nil {
		t.Fatal(err)
	}

	again := e.internal("POST", dealsapi.PathDeals, string(body), "Idempotency-Key", "before-once")
	var want, got map[string]any
	e.data(again, http.StatusCreated, &got)
	if err := json.Unmarshal(stored.Data, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay (replayed=%q) (-stored +replayed):\n%s", again.Header.Get("Idempotent-Replayed"), diff)
	}
}

func TestInternalCreateIsIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := e.stages()
	body := map[string]any{"title": "Acme deal", "value": 2500, "currency": "EUR", "stage_id": nil,
		"company_id": 100, "contact_id": 500, "assigned_to": userID, "source_lead_id": 7}

	first := e.internal("POST", dealsapi.PathDeals, body, "Idempotency-Key", "lead-7-deal")
	var d dealJSON
	e.data(first, http.StatusCreated, &d)
	if d.StageID != st["Prospecting"].ID || d.Value != "2500.00" || d.Currency != "EUR" || *d.CompanyName != "Acme" || *d.SourceLeadID != 7 {
		t.Errorf("internal deal = %+v", d)
	}
	again := e.internal("POST", dealsapi.PathDeals, body, "Idempotency-Key", "lead-7-deal")
	var d2 dealJSON
	e.data(again, http.StatusCreated, &d2)
	if d2.ID != d.ID || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay gave deal %d (replayed=%q), want %d", d2.ID, again.Header.Get("Idempotent-Replayed"), d.ID)
	}
	if diff := cmp.Diff(string(first.Body), string(again.Body)); diff != "" {
		t.Errorf("replayed body (-first +replay):\n%s", diff)
	}
	body["title"] = "Another title"
	wantProblem(t, e.internal("POST", dealsapi.PathDeals, body, "Idempotency-Key", "lead-7-deal"), http.StatusConflict, "idempotency_key_reused")

	// Concurrent retries of one key create one deal.
	concurrent := map[string]any{"title": "Race", "value": "1"}
	ids := make([]int64, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.internal("POST", dealsapi.PathDeals, concurrent, "Idempotency-Key", "race")
			var x struct{ Data dealJSON }
			_ = json.Unmarshal(r.Body, &x)
			ids[i] = x.Data.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id == 0 || id != ids[0] {
			t.Fatalf("concurrent ids = %v, want one id", ids)
		}
	}
	if total := e.list("", e.user).Total; total != 2 {
		t.Errorf("deals stored = %d, want 2", total)
	}
}

func TestInternalErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wantProblem(t, e.do("POST", dealsapi.PathDeals, e.admin, map[string]any{"title": "x"}), http.StatusUnauthorized, "unauthenticated")
	wantProblem(t, e.do("GET", dealsapi.MergePath(1), "", nil, "X-Internal-Token", "wrong-secret-wrong-secret"), http.StatusUnauthorized, "unauthenticated")
	tests := []struct {
		name   string
		body   map[string]any
		fields []string
	}{
		{"unknown stage", map[string]any{"title": "x", "stage_id": 999999}, []string{"stage_id"}},
		{"unknown company", map[string]any{"title": "x", "company_id": 999}, []string{"company_id"}},
		{"unknown assignee", map[string]any{"title": "x", "assigned_to": 999}, []string{"assigned_to"}},
		{"unknown source lead", map[string]any{"title": "x", "source_lead_id": 999}, []string{"source_lead_id"}},
		{"bad value", map[string]any{"title": "x", "value": "1.999"}, []string{"value"}},
		{"no title", map[string]any{}, []string{"title"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, e.internal("POST", dealsapi.PathDeals, tc.body, "Idempotency-Key", tc.name), http.StatusUnprocessableEntity, "validation_failed", tc.fields...)
		})
	}
	wantProblem(t, e.internal("GET", dealsapi.MergePath(999999), nil), http.StatusNotFound, "not_found")
}

type mergeJSON struct {
	Deal      dealJSON        `json:"deal"`
	StageName string          `json:"stage_name"`
	OwnerName *string         `json:"owner_name"`
	Company   json.RawMessage `json:"company"`
	Contact   json.RawMessage `json:"contact"`
	Quote     *quoteJSON      `json:"quote"`
}

func (e *env) merge(id int64) mergeJSON {
	e.t.Helper()
	var m mergeJSON
	e.data(e.internal("GET", dealsapi.MergePath(id), nil), http.StatusOK, &m)
	return m
}

func idOf(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	if string(raw) == "null" {
		return nil
	}
	var x struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(raw, &x); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return x.ID
}

func TestMerge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.createDeal(map[string]any{"title": "Merge me", "company_id": 100, "value": "99.90"})

	m := e.merge(d.ID)
	got := []any{m.Deal.ID, m.StageName, *m.OwnerName, idOf(t, m.Company), idOf(t, m.Contact), m.Quote == nil}
	want := []any{d.ID, "Prospecting", "Uma User", int64(100), int64(500), true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merge without quotes: deal, stage, owner, company, contact (primary), no quote (-want +got):\n%s", diff)
	}
	var company struct {
		Name   string `json:"name"`
		Domain string `json:"domain"`
	}
	if err := json.Unmarshal(m.Company, &company); err != nil || company.Name != "Acme" || company.Domain != "acme.test" {
		t.Errorf("company passed through = %s", m.Company)
	}

	older := e.createQuote(d.ID, map[string]any{"line_items": items([3]any{"x", 1, 1})})
	newest := e.createQuote(d.ID, map[string]any{"line_items": items([3]any{"x", 1, 2})})
	if q := e.merge(d.ID).Quote; q == nil || q.ID != newest.ID {
		t.Errorf("merge quote without an accepted one = %+v, want newest %d", q, newest.ID)
	}
	e.data(e.do("PUT", path("/quotes/%d", older.ID), e.user, map[string]any{"status": "accepted"}), http.StatusOK, nil)
	if q := e.merge(d.ID).Quote; q == nil || q.ID != older.ID || q.Total != "1.00" || len(q.LineItems) != 1 {
		t.Errorf("merge quote = %+v, want accepted %d", q, older.ID)
	}

	// The deal's own contact wins over the company's primary contact.
	e.data(e.do("PUT", path("/deals/%d", d.ID), e.user, map[string]any{"title": "Merge me", "contact_id": 501}), http.StatusOK, nil)
	if c := idOf(t, e.merge(d.ID).Contact); c != int64(501) {
		t.Errorf("merge contact = %v, want 501", c)
	}
	// No company, no contact, no owner → nulls.
	bare := e.createDeal(map[string]any{"title": "Bare", "assigned_to": nil})
	mb := e.merge(bare.ID)
	if string(mb.Company) != "null" || string(mb.Contact) != "null" || mb.OwnerName != nil || mb.Quote != nil {
		t.Errorf("bare merge = %+v", mb)
	}
	// Globex has no primary contact.
	g := e.createDeal(map[string]any{"title": "Globex", "company_id": 101})
	if c := e.merge(g.ID).Contact; string(c) != "null" {
		t.Errorf("contact without primary = %s", c)
	}
}

func TestCompanyRenameEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.createDeal(map[string]any{"title": "Renamed", "company_id": 100})
	ev := outbox.Event{ID: 1, Type: "company.updated", AggregateID: "100", Data: json.RawMessage(`{"id":100,"name":"Acme Corp","updated_at":"2026-02-01T00:00:00.000000Z"}`)}
	for range 2 { // redelivery is harmless
		if err := e.store.HandleContactsEvent(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	var got dealJSON
	e.data(e.do("GET", path("/deals/%d", d.ID), e.user, nil), http.StatusOK, &got)
	if got.CompanyName == nil || *got.CompanyName != "Acme Corp" {
		t.Errorf("company_name = %v, want Acme Corp", got.CompanyName)
	}
	if p := e.list("?search=corp", e.user); p.Total != 1 {
		t.Errorf("search by new company name found %d", p.Total)
	}
}

// TestSourceLeadMustExist: a new source_lead_id is asked of leads; an
// unchanged one is not, so a deal keeps its source after the lead is
// deleted and an unrelated edit still works.
func TestSourceLeadMustExist(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var d dealJSON
	e.data(e.do("POST", "/deals", e.user, map[string]any{"title": "From a lead", "source_lead_id": knownLeads[1]}), http.StatusCreated, &d)
	e.leads.RemoveLead(knownLeads[1])
	var after dealJSON
	e.data(e.do("PUT", path("/deals/%d", d.ID), e.user,
		map[string]any{"title": "Renamed", "source_lead_id": knownLeads[1]}), http.StatusOK, &after)
	if after.SourceLeadID == nil || *after.SourceLeadID != knownLeads[1] || after.Title != "Renamed" {
		t.Errorf("deal after an unrelated edit: %+v", after)
	}
	r := e.do("PUT", path("/deals/%d", d.ID), e.user, map[string]any{"title": "Renamed", "source_lead_id": knownLeads[0] + 1000})
	wantBody(t, r, http.StatusUnprocessableEntity, `{"type":"/docs/problems#validation_failed","title":"Unprocessable Entity","status":422,`+
		`"detail":"one or more fields are invalid","code":"validation_failed","request_id":"…",`+
		`"errors":[{"field":"source_lead_id","message":"does not exist"}]}`+"\n")
}
