package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/historyapi"
)

// history reads a record's whole history through the API, newest first,
// as "<action> <via> <actor type>:<actor id> <field>=<from>→<to> ...",
// prefixed by the object of a record that belongs to object.
func (e *env) history(t *testing.T, path, object, token string) []string {
	t.Helper()
	r := e.do(t, http.MethodGet, path+"/history?per_page=100", token, nil)
	wantStatus(t, r, http.StatusOK)
	var page historyapi.HistoryPage
	if err := json.Unmarshal(r.Raw, &page); err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, en := range page.Data {
		who := en.Actor.Type
		if en.Actor.ID != nil {
			who += fmt.Sprint(":", *en.Actor.ID)
		}
		line := fmt.Sprintf("%s %s %s", en.Action, en.Via, who)
		if en.Object != object { // a record that belongs to this one
			line = en.Object + " " + line
		}
		for _, c := range en.Changes {
			line += fmt.Sprintf(" %s=%s→%s", c.Field, c.From, c.To)
		}
		if en.RequestID == "" {
			t.Errorf("%s: entry %d without a request id", path, en.ID)
		}
		out = append(out, line)
	}
	return out
}

// TestContactHistory: single writes, a batch and an import are recorded
// with who and how; a company rename is the company's history, not each
// contact's; the history is as visible as the record.
func TestContactHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	co := id(t, e.do(t, http.MethodPost, "/companies", e.admin, map[string]any{"name": "Acme"}))
	c := id(t, e.do(t, http.MethodPost, "/contacts", e.admin, map[string]any{"first_name": "Ann", "last_name": "Lee", "company_id": co}))
	path := fmt.Sprint("/contacts/", c)
	wantStatus(t, e.do(t, http.MethodPut, path, e.admin, map[string]any{"first_name": "Ann", "last_name": "Lee", "company_id": co, "status": "inactive"}), 200)
	wantStatus(t, e.do(t, http.MethodPut, fmt.Sprint("/companies/", co), e.admin, map[string]any{"name": "Acme Ltd"}), 200)
	wantStatus(t, e.do(t, http.MethodPost, path+"/notes", e.user, map[string]any{"content": "Call back"}), 201)
	wantStatus(t, e.do(t, http.MethodPost, "/contacts/batch/update", e.user, map[string]any{
		"inputs": []map[string]any{{"id": c, "first_name": "Anne", "last_name": "Lee"}}}), 200)
	wantStatus(t, e.upload(t, e.admin, "file", "c.csv", []byte("first_name,last_name,email\nBo,Day,bo@example.com\n")), 200)

	want := []string{
		`updated batch user:2 first_name="Ann"→"Anne"`,
		fmt.Sprintf(`note created api user:2 content=null→"Call back" parent_id=null→%d parent_type=null→"contact"`, c),
		`updated api user:1 status="active"→"inactive"`,
		fmt.Sprintf(`created api user:1 company_id=null→%d first_name=null→"Ann" last_name=null→"Lee" status=null→"active"`, co),
	}
	if diff := cmp.Diff(want, e.history(t, path, "contact", e.user)); diff != "" {
		t.Errorf("contact history (-want +got):\n%s", diff)
	}
	want = []string{`updated api user:1 name="Acme"→"Acme Ltd"`, `created api user:1 name=null→"Acme"`}
	if diff := cmp.Diff(want, e.history(t, fmt.Sprint("/companies/", co), "company", e.user)); diff != "" {
		t.Errorf("company history (-want +got):\n%s", diff)
	}
	var imported int64
	if err := e.db.QueryRow(t.Context(), `SELECT id FROM contacts WHERE email = 'bo@example.com'`).Scan(&imported); err != nil {
		t.Fatal(err)
	}
	want = []string{`created import user:1 email=null→"bo@example.com" first_name=null→"Bo" last_name=null→"Day" status=null→"active"`}
	if diff := cmp.Diff(want, e.history(t, fmt.Sprint("/contacts/", imported), "contact", e.admin)); diff != "" {
		t.Errorf("imported contact's history (-want +got):\n%s", diff)
	}

	// Bad input and records that cannot be read.
	wantProblem(t, e.do(t, http.MethodGet, path+"/history?per_page=0", e.user, nil), 422, "validation_failed", "per_page")
	wantProblem(t, e.do(t, http.MethodGet, path+"/history?per_page=101", e.user, nil), 422, "validation_failed", "per_page")
	wantProblem(t, e.do(t, http.MethodGet, path+"/history?before=x", e.user, nil), 422, "validation_failed", "before")
	wantProblem(t, e.do(t, http.MethodGet, "/contacts/987654/history", e.user, nil), 404, "not_found")
	wantProblem(t, e.do(t, http.MethodGet, "/companies/987654/history", e.user, nil), 404, "not_found")
	wantStatus(t, e.do(t, http.MethodGet, path+"/history", "", nil), 401)
	wantStatus(t, e.do(t, http.MethodDelete, path, e.admin, nil), 200)
	// A deleted record's history is kept (an admin reads it in the audit
	// of the record's type); its route answers as the record does.
	wantProblem(t, e.do(t, http.MethodGet, path+"/history", e.admin, nil), 404, "not_found")
	if n := e.count(t, `SELECT count(*) FROM history WHERE object = 'contact' AND record_id = $1 AND action = 'deleted'`, c); n != 1 {
		t.Errorf("%d deletion entries, want 1", n)
	}

	// An admin reads any record's history, a deleted one's too.
	admin := fmt.Sprintf("/history?object=contact&id=%d&per_page=1", c)
	r := e.do(t, http.MethodGet, admin, e.admin, nil)
	wantStatus(t, r, http.StatusOK)
	var page historyapi.HistoryPage
	if err := json.Unmarshal(r.Raw, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].Action != historyapi.Deleted || !page.HasMore || page.NextBefore == nil {
		t.Errorf("admin history of the deleted contact: %s", r.Raw)
	}
	wantProblem(t, e.do(t, http.MethodGet, admin, e.user, nil), 403, "forbidden")
	wantProblem(t, e.do(t, http.MethodGet, "/history?object=lead&id=1", e.admin, nil), 422, "validation_failed", "object")
	wantProblem(t, e.do(t, http.MethodGet, "/history?object=contact&id=x&per_page=500", e.admin, nil), 422, "validation_failed", "id", "per_page")
	wantProblem(t, e.do(t, http.MethodGet, "/history?object=company&id=987654", e.admin, nil), 404, "not_found")
}
