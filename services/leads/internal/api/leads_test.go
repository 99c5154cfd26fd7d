package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/outbox"
)

func TestLeadCRUD(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	r := e.do("POST", "/leads", e.user, map[string]any{
		"first_name": " Jane ", "last_name": "Doe", "email": "jane@acme.example", "phone": "+1 555 0100",
		"company": "Acme, Inc.", "job_title": "CTO", "source": "web", "notes": "met at expo",
		"tags": "vip, hot ,vip", "assigned_to": 3, "id": 999, "qualified_at": "2020-01-01T00:00:00Z",
	})
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	body := r.json(t)
	if body["success"] != true || body["message"] == "" {
		t.Fatalf("create envelope: %s", r.body)
	}
	lead := body["data"].(map[string]any)
	id := lead["id"].(float64)
	want := map[string]any{
		"id": id, "first_name": "Jane", "last_name": "Doe", "email": "jane@acme.example", "phone": "+1 555 0100",
		"company": "Acme, Inc.", "job_title": "CTO", "source": "web", "status": "new", "notes": "met at expo",
		"tags": "vip,hot", "assigned_to": 3.0, "assigned_to_name": "Tom Teammate", "disqualify_reason": nil,
		"qualified_at": nil, "contact_id": nil, "company_id": nil, "deal_id": nil, "created_by": 1.0,
		"custom_fields": map[string]any{}, "created_at": lead["created_at"], "updated_at": lead["updated_at"],
	}
	if diff := cmp.Diff(want, lead); diff != "" {
		t.Fatalf("created lead (-want +got):\n%s", diff)
	}
	ts := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)
	if !ts.MatchString(lead["created_at"].(string)) {
		t.Fatalf("created_at format: %v", lead["created_at"])
	}

	r = e.do("GET", path("/leads/{id}", int64(id)), e.user, nil)
	if r.status != 200 || r.json(t)["success"] != true {
		t.Fatalf("get: %d %s", r.status, r.body)
	}

	// PUT: names required, absent keeps, null and "" clear.
	r = e.do("PUT", path("/leads/{id}", int64(id)), e.user, map[string]any{
		"first_name": "Janet", "last_name": "Doe", "phone": nil, "notes": "", "status": "contacted", "assigned_to": nil,
	})
	if r.status != 200 {
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	got := r.json(t)["data"].(map[string]any)
	for k, v := range map[string]any{"first_name": "Janet", "phone": nil, "notes": nil, "email": "jane@acme.example",
		"company": "Acme, Inc.", "status": "contacted", "assigned_to": nil, "assigned_to_name": nil} {
		if got[k] != v {
			t.Errorf("after PUT %s = %v, want %v", k, got[k], v)
		}
	}

	r = e.do("DELETE", path("/leads/{id}", int64(id)), e.user, nil)
	if r.status != 200 || r.json(t)["success"] != true {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	wantProblem(t, e.do("GET", path("/leads/{id}", int64(id)), e.user, nil), 404, "not_found")

	// Every change went to the outbox in its transaction.
	var types []string
	rows, err := e.store.DB().Query(context.Background(), `SELECT type FROM outbox WHERE stream = $1 ORDER BY id`, outbox.Stream("leads"))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		types = append(types, s)
	}
	if diff := cmp.Diff([]string{"lead.created", "lead.updated", "lead.deleted"}, types); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	// The delete event names the lead and keeps none of its personal data.
	var payload string
	if err := e.store.DB().QueryRow(context.Background(), `SELECT payload::text FROM outbox
		WHERE stream = $1 AND type = 'lead.deleted'`, outbox.Stream("leads")).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`{"id":%d}`, int64(id)); payload != want {
		t.Errorf("lead.deleted payload = %s, want %s", payload, want)
	}
}

func TestLeadBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createLead(map[string]any{"first_name": "A", "last_name": "B"})
	long := strings.Repeat("x", 101)
	for _, tc := range []struct {
		name   string
		method string
		path   string
		body   any
		status int
		code   string
		fields []string
	}{
		{"missing names", "POST", "/leads", map[string]any{"email": "a@b.example"}, 422, "validation_failed", []string{"first_name", "last_name"}},
		{"blank names", "POST", "/leads", map[string]any{"first_name": " ", "last_name": ""}, 422, "validation_failed", []string{"first_name", "last_name"}},
		{"long name", "POST", "/leads", map[string]any{"first_name": long, "last_name": "B"}, 422, "validation_failed", []string{"first_name"}},
		{"long company", "POST", "/leads", map[string]any{"first_name": "A", "last_name": "B", "company": strings.Repeat("c", 256)}, 422, "validation_failed", []string{"company"}},
		{"bad email", "POST", "/leads", map[string]any{"first_name": "A", "last_name": "B", "email": "not-an-email"}, 422, "validation_failed", []string{"email"}},
		{"bad status", "POST", "/leads", map[string]any{"first_name": "A", "last_name": "B", "status": "won"}, 422, "validation_failed", []string{"status"}},
		{"unknown assignee", "POST", "/leads", map[string]any{"first_name": "A", "last_name": "B", "assigned_to": 999}, 422, "validation_failed", []string{"assigned_to"}},
		{"assignee not a number", "POST", "/leads", map[string]any{"first_name": "A", "last_name": "B", "assigned_to": "x"}, 422, "validation_failed", []string{"assigned_to"}},
		{"malformed json", "POST", "/leads", `{"first_name":`, 400, "malformed_json", nil},
		{"put without names", "PUT", path("/leads/{id}", id), map[string]any{"email": "a@b.example"}, 422, "validation_failed", []string{"first_name", "last_name"}},
		{"put bad status", "PUT", path("/leads/{id}", id), map[string]any{"first_name": "A", "last_name": "B", "status": "open"}, 422, "validation_failed", []string{"status"}},
		{"put unknown id", "PUT", "/leads/999999", map[string]any{"first_name": "A", "last_name": "B"}, 404, "not_found", nil},
		{"get unknown id", "GET", "/leads/999999", nil, 404, "not_found", nil},
		{"get non-numeric id", "GET", "/leads/abc", nil, 404, "not_found", nil},
		{"delete unknown id", "DELETE", "/leads/999999", nil, 404, "not_found", nil},
		{"qualify unknown id", "POST", "/leads/999999/qualify", map[string]any{}, 404, "not_found", nil},
		{"disqualify unknown id", "PUT", "/leads/999999/disqualify", map[string]any{}, 404, "not_found", nil},
		{"notes of unknown lead", "POST", "/leads/999999/notes", map[string]any{"content": "x"}, 404, "not_found", nil},
		{"note without content", "POST", path("/leads/{id}/notes", id), map[string]any{}, 422, "validation_failed", []string{"content"}},
		{"task without title", "POST", path("/leads/{id}/tasks", id), map[string]any{}, 422, "validation_failed", []string{"title"}},
		{"long reason", "PUT", path("/leads/{id}/disqualify", id), map[string]any{"reason": strings.Repeat("r", 1001)}, 422, "validation_failed", []string{"reason"}},
		{"per_page=abc", "GET", "/leads?per_page=abc", nil, 422, "validation_failed", []string{"per_page"}},
		{"page=0", "GET", "/leads?page=0", nil, 422, "validation_failed", []string{"page"}},
		{"unknown sort_by", "GET", "/leads?sort_by=phone", nil, 422, "validation_failed", []string{"sort_by"}},
		{"bad sort_dir", "GET", "/leads?sort_dir=up", nil, 422, "validation_failed", []string{"sort_dir"}},
		{"bad date_from", "GET", "/leads?date_from=2024-13-01", nil, 422, "validation_failed", []string{"date_from"}},
		{"bad date_to", "GET", "/leads?date_to=yesterday", nil, 422, "validation_failed", []string{"date_to"}},
		{"bad status filter", "GET", "/leads?status=won", nil, 422, "validation_failed", []string{"status"}},
		{"bad scope", "GET", "/leads?scope=world", nil, 422, "validation_failed", []string{"scope"}},
		{"bad assigned_to filter", "GET", "/leads?assigned_to=x", nil, 422, "validation_failed", []string{"assigned_to"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, e.do(tc.method, tc.path, e.user, tc.body), tc.status, tc.code, tc.fields...)
		})
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wantProblem(t, e.do("GET", "/leads", "", nil), 401, "unauthenticated")
	wantProblem(t, e.do("GET", "/leads", "garbage.token.here", nil), 401, "unauthenticated")
	wantProblem(t, e.do("GET", "/leads/template", e.user, nil), 403, "forbidden")
	wantProblem(t, e.do("GET", "/leads/export", e.user, nil), 403, "forbidden")
	wantProblem(t, e.do("GET", leadsapi.LeadPath(1), e.user, nil), 401, "unauthenticated")
	wantProblem(t, e.do("GET", "/nowhere", e.user, nil), 404, "not_found")
}

func listIDs(t *testing.T, e *env, query string) ([]string, map[string]any) {
	t.Helper()
	r := e.do("GET", "/leads?"+query, e.user, nil)
	if r.status != 200 {
		t.Fatalf("list %s: %d %s", query, r.status, r.body)
	}
	m := r.json(t)
	var names []string
	for _, x := range m["data"].([]any) {
		l := x.(map[string]any)
		names = append(names, l["first_name"].(string))
	}
	return names, m
}

func TestLeadList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createLead(map[string]any{"first_name": "Carol", "last_name": "Smith", "email": "carol@zeta.example", "company": "Zeta", "source": "web", "assigned_to": 1, "phone": "555-0101"})
	e.createLead(map[string]any{"first_name": "alice", "last_name": "Jones", "email": "alice@beta.example", "company": "beta", "source": "Referral", "assigned_to": 3, "status": "contacted"})
	e.createLead(map[string]any{"first_name": "Bob", "last_name": "Brown", "company": "Acme, Inc.", "assigned_to": 4, "status": "qualified"})
	e.createLead(map[string]any{"first_name": "Dave", "last_name": "Smith", "email": "dave@acme.example", "source": "web"})

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{"alice", "Bob", "Carol", "Dave"}},
		{"sort_by=name&sort_dir=desc", []string{"Dave", "Carol", "Bob", "alice"}},
		{"sort_by=email", []string{"alice", "Carol", "Dave", "Bob"}},
		{"sort_by=email&sort_dir=DESC", []string{"Bob", "Dave", "Carol", "alice"}}, // nulls first in DESC
		{"sort_by=company_name", []string{"Bob", "alice", "Carol", "Dave"}},
		{"sort_by=status", []string{"alice", "Carol", "Dave", "Bob"}},
		{"sort_by=source", []string{"alice", "Carol", "Dave", "Bob"}},
		{"sort_by=assigned_to_name", []string{"Bob", "Tom" /* placeholder replaced below */}},
		{"sort_by=created_at&sort_dir=desc", []string{"Dave", "Bob", "alice", "Carol"}},
		{"search=smith", []string{"Carol", "Dave"}},
		{"search=CAROL%20SMITH", []string{"Carol"}},
		{"search=acme", []string{"Bob", "Dave"}},
		{"search=555-01", []string{"Carol"}},
		{"search=beta.example", []string{"alice"}},
		{"search=100%25", nil},
		{"status=contacted", []string{"alice"}},
		{"source=WEB", []string{"Carol", "Dave"}},
		{"assigned_to=4", []string{"Bob"}},
		{"scope=me", []string{"Carol"}},
		{"scope=team", []string{"alice", "Carol"}},
		{"scope=company", []string{"alice", "Bob", "Carol", "Dave"}},
		{"date_from=2000-01-01&date_to=2999-12-31", []string{"alice", "Bob", "Carol", "Dave"}},
		{"date_to=2000-01-01", nil},
		{"per_page=2&page=2", []string{"Carol", "Dave"}},
		{"per_page=2&page=9", nil},
	} {
		if tc.query == "sort_by=assigned_to_name" {
			// Olga Other (Bob), Tom Teammate (alice), Uma User (Carol), none (Dave)
			tc.want = []string{"Bob", "alice", "Carol", "Dave"}
		}
		got, _ := listIDs(t, e, tc.query)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("GET /leads?%s (-want +got):\n%s", tc.query, diff)
		}
	}

	_, m := listIDs(t, e, "per_page=3&page=2")
	delete(m, "data")
	if diff := cmp.Diff(map[string]any{"current_page": 2.0, "last_page": 2.0, "per_page": 3.0, "total": 4.0}, m); diff != "" {
		t.Fatalf("envelope (-want +got):\n%s", diff)
	}
	_, m = listIDs(t, e, "per_page=500&search=smith")
	if m["per_page"] != 100.0 || m["total"] != 2.0 {
		t.Fatalf("clamped envelope: %v", m)
	}
}

func TestAssigneeRename(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createLead(map[string]any{"first_name": "A", "last_name": "B", "assigned_to": 3})
	// identity renames user 3: the consumer's handler refreshes the column.
	u := directory.User{ID: 3, Name: "Aaron Renamed", Email: "tom@example.com", Role: "user", Active: true, UpdatedAt: time.Now().Add(time.Minute)}
	data, _ := json.Marshal(u)
	if err := e.store.IdentityHandler()(context.Background(), outbox.Event{Type: directory.UserUpdated, Data: data}); err != nil {
		t.Fatal(err)
	}
	r := e.do("GET", path("/leads/{id}", id), e.user, nil)
	if got := r.json(t)["data"].(map[string]any)["assigned_to_name"]; got != "Aaron Renamed" {
		t.Fatalf("assigned_to_name = %v", got)
	}
	// An older event does not roll the name back.
	old := u
	old.Name, old.UpdatedAt = "Stale", time.Now().Add(-time.Hour)
	data, _ = json.Marshal(old)
	if err := e.store.IdentityHandler()(context.Background(), outbox.Event{Type: directory.UserUpdated, Data: data}); err != nil {
		t.Fatal(err)
	}
	r = e.do("GET", path("/leads/{id}", id), e.user, nil)
	if got := r.json(t)["data"].(map[string]any)["assigned_to_name"]; got != "Aaron Renamed" {
		t.Fatalf("assigned_to_name after stale event = %v", got)
	}
}

func TestNotesAndTasks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createLead(map[string]any{"first_name": "A", "last_name": "B"})
	r := e.do("POST", path("/leads/{id}/notes", id), e.user, map[string]any{"content": "called"})
	if r.status != 201 {
		t.Fatalf("note: %d %s", r.status, r.body)
	}
	r = e.do("POST", path("/leads/{id}/tasks", id), e.user, map[string]any{"title": "follow up", "due_date": "2030-01-02", "assigned_to": 1})
	if r.status != 201 {
		t.Fatalf("task: %d %s", r.status, r.body)
	}
	if got := r.json(t)["data"].(map[string]any)["lead_id"]; got != float64(id) {
		t.Fatalf("task lead_id = %v", got)
	}
	r = e.do("GET", path("/leads/{id}/tasks", id), e.user, nil)
	if n := len(r.json(t)["data"].([]any)); n != 1 {
		t.Fatalf("tasks = %d", n)
	}
}

func TestInternalLeads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	send := func(key string, body string) resp {
		req := httptest.NewRequest("POST", leadsapi.PathLeads, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Internal-Token", secret)
		req.Header.Set("Idempotency-Key", key)
		return e.serve(req)
	}
	body := `{"first_name":"Ian","last_name":"Take","email":"ian@in.example","source":"public-api"}`
	r1 := send("intake-1", body)
	r2 := send("intake-1", body)
	if r1.status != 201 || r2.status != 201 {
		t.Fatalf("internal create: %d %s / %d %s", r1.status, r1.body, r2.status, r2.body)
	}
	id1 := r1.json(t)["data"].(map[string]any)["id"]
	if id2 := r2.json(t)["data"].(map[string]any)["id"]; id1 != id2 {
		t.Fatalf("replay created another lead: %v vs %v", id1, id2)
	}
	wantProblem(t, send("intake-1", `{"first_name":"Other","last_name":"Body"}`), 409, "idempotency_key_reused")
	wantProblem(t, send("intake-2", `{"first_name":"","last_name":"Body"}`), 422, "validation_failed", "first_name")

	req := httptest.NewRequest("GET", leadsapi.PathLeads+"/"+jsonNum(id1), nil)
	req.Header.Set("X-Internal-Token", secret)
	r := e.serve(req)
	if r.status != 200 || r.json(t)["data"].(map[string]any)["source"] != "public-api" {
		t.Fatalf("internal get: %d %s", r.status, r.body)
	}
	_, m := listIDs(t, e, "")
	if m["total"] != 1.0 {
		t.Fatalf("total = %v", m["total"])
	}
}

func jsonNum(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestFreshUserAssignableAtOnce: a user identity created a moment ago,
// whose user.created event this service has not consumed, is a valid
// assignee at once (the read model asks identity on a miss); an id
// identity does not know stays a 422.
func TestFreshUserAssignableAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hire := e.identity.AddUser(directory.User{ID: 4242, Name: "New Hire", Email: "hire@example.com", Role: "user", Active: true})
	r := e.do("POST", "/leads", e.user, map[string]any{"first_name": "A", "last_name": "B", "assigned_to": hire.ID})
	if r.status != http.StatusCreated {
		t.Fatalf("create assigned to a fresh user: %d %s", r.status, r.body)
	}
	lead := r.json(t)["data"].(map[string]any)
	got := map[string]any{"assigned_to": lead["assigned_to"], "assigned_to_name": lead["assigned_to_name"]}
	if diff := cmp.Diff(map[string]any{"assigned_to": 4242.0, "assigned_to_name": "New Hire"}, got); diff != "" {
		t.Fatalf("assignee (-want +got):\n%s", diff)
	}
	wantProblem(t, e.do("POST", "/leads", e.user, map[string]any{"first_name": "A", "last_name": "B", "assigned_to": 4243}),
		http.StatusUnprocessableEntity, "validation_failed", "assigned_to")
}
