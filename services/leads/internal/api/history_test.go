package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/contactsapi/contactsapitest"
	"github.com/opencrm/crm/pkg/contract/dealsapi/dealsapitest"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/patch"
)

// named signs a token of a user who has a name, as identity's carry it:
// the actor of an entry names the person.
func (e *env) named(id int64, role string, team *int64, name string) string {
	e.t.Helper()
	now := time.Now()
	return e.issuer.Sign(e.t, auth.Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: auth.Issuer, Audience: jwt.ClaimStrings{auth.Audience}, Subject: strconv.FormatInt(id, 10),
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(15 * time.Minute)),
		},
		Role: role, TeamID: team, Name: name,
	})
}

// entryLine renders an entry as "<action> <via> <actor type>:<id>(<name>)
// <field>=<from>→<to> ...", prefixed by the object of a record that
// belongs to object; a qualification's time is <time>.
func entryLine(en historyapi.HistoryEntry, object string) string {
	who := en.Actor.Type
	if en.Actor.ID != nil {
		who += fmt.Sprint(":", *en.Actor.ID)
	}
	if en.Actor.Name != "" {
		who += "(" + en.Actor.Name + ")"
	}
	line := fmt.Sprintf("%s %s %s", en.Action, en.Via, who)
	if en.Object != object {
		line = en.Object + " " + line
	}
	for _, c := range en.Changes {
		to := string(c.To)
		if c.Field == "qualified_at" && to != "null" {
			to = "<time>"
		}
		line += fmt.Sprintf(" %s=%s→%s", c.Field, c.From, to)
	}
	return line
}

// history reads a lead's whole history through the API, newest first, as
// entryLine renders it; every entry made by a request names it.
func (e *env) history(t *testing.T, id int64, token string) []string {
	t.Helper()
	r := e.do(http.MethodGet, path("/leads/{id}/history?per_page=100", id), token, nil)
	if r.status != http.StatusOK {
		t.Fatalf("history of lead %d: %d %s", id, r.status, r.body)
	}
	var page historyapi.HistoryPage
	if err := json.Unmarshal(r.body, &page); err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, en := range page.Data {
		if en.RequestID == "" {
			t.Errorf("lead %d: entry %d without a request id", id, en.ID)
		}
		out = append(out, entryLine(en, "lead"))
	}
	return out
}

// invalidParam is the 422 of a history query parameter.
func invalidParam(field, message string) map[string]any {
	return map[string]any{"type": "/docs/problems#validation_failed", "title": "Unprocessable Entity", "status": 422.0,
		"detail": "one or more fields are invalid", "code": "validation_failed",
		"errors": []any{map[string]any{"field": field, "message": message}}}
}

func leadNotFound() map[string]any {
	return map[string]any{"type": "/docs/problems#not_found", "title": "Not Found", "status": 404.0,
		"detail": "lead not found", "code": "not_found"}
}

// TestLeadHistory: a lead's creation, edits, disqualification, notes,
// batch writes, import and deletion are recorded with who and how; the
// history is as visible as the lead (its GET's rule: every user reads
// every lead); bad queries are 422s naming the parameter.
func TestLeadHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	team := int64(7)
	uma := e.named(1, "user", &team, "Uma User")
	r := e.do(http.MethodPost, "/leads", uma, map[string]any{"first_name": "Jane", "last_name": "Doe",
		"email": "jane@example.com", "company": "Acme", "assigned_to": 3})
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	id := int64(r.json(t)["data"].(map[string]any)["id"].(float64))
	lead := path("/leads/{id}", id)
	for _, w := range []struct {
		method, path, token string
		body                any
		status              int
	}{
		{http.MethodPut, lead, uma, map[string]any{"first_name": "Jane", "last_name": "Doe", "status": "contacted", "phone": "555-0100"}, 200},
		{http.MethodPut, lead, uma, map[string]any{"first_name": "Jane", "last_name": "Doe"}, 200}, // changes nothing
		{http.MethodPost, lead + "/notes", e.user, map[string]any{"content": "Call back"}, 201},
		{http.MethodPut, lead + "/disqualify", e.admin, map[string]any{"reason": "No budget"}, 200},
	} {
		if r := e.do(w.method, w.path, w.token, w.body); r.status != w.status {
			t.Fatalf("%s %s: %d %s", w.method, w.path, r.status, r.body)
		}
	}
	if r := e.batch("update", map[string]any{"inputs": []any{
		map[string]any{"id": id, "first_name": "Janet", "last_name": "Doe"}}}, ""); r.status != http.StatusOK {
		t.Fatalf("batch update: %d %s", r.status, r.body)
	}
	want := []string{
		`updated batch user:1 first_name="Jane"→"Janet"`,
		`updated api user:2 disqualify_reason=null→"No budget" status="contacted"→"disqualified"`,
		fmt.Sprintf(`note created api user:1 content=null→"Call back" parent_id=null→%d parent_type=null→"lead"`, id),
		`updated api user:1(Uma User) phone=null→"555-0100" status="new"→"contacted"`,
		`created api user:1(Uma User) assigned_to=null→3 company=null→"Acme" email=null→"jane@example.com" first_name=null→"Jane" last_name=null→"Doe" status=null→"new"`,
	}
	if diff := cmp.Diff(want, e.history(t, id, e.user)); diff != "" {
		t.Errorf("lead history (-want +got):\n%s", diff)
	}
	// Every user may read every lead, so its history too: one outside
	// the assignee's team, who may not edit it.
	olga := e.issuer.Token(t, 4, "user", nil)
	if r := e.do(http.MethodGet, lead, olga, nil); r.status != http.StatusOK {
		t.Fatalf("GET by another team's user: %d %s", r.status, r.body)
	}
	if diff := cmp.Diff(want, e.history(t, id, olga)); diff != "" {
		t.Errorf("lead history read by another team's user (-want +got):\n%s", diff)
	}

	// An imported lead is the importer's, via import.
	if r := e.upload(uma, "file", "first_name,last_name,email\nBo,Day,bo@example.com\n"); r.status != http.StatusOK {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	var imported int64
	if err := e.db.QueryRow(t.Context(), `SELECT id FROM leads WHERE email = 'bo@example.com'`).Scan(&imported); err != nil {
		t.Fatal(err)
	}
	want = []string{`created import user:1(Uma User) email=null→"bo@example.com" first_name=null→"Bo" last_name=null→"Day" status=null→"new"`}
	if diff := cmp.Diff(want, e.history(t, imported, e.user)); diff != "" {
		t.Errorf("imported lead's history (-want +got):\n%s", diff)
	}

	// Bad queries (checked before the lead), a lead that never existed,
	// no token.
	for q, p := range map[string]map[string]any{
		"?per_page=0":   invalidParam("per_page", "must be an integer between 1 and 100"),
		"?per_page=101": invalidParam("per_page", "must be an integer between 1 and 100"),
		"?before=x":     invalidParam("before", "must be an entry id (the next_before of a page)"),
	} {
		wantExactProblem(t, e.do(http.MethodGet, lead+"/history"+q, e.user, nil), p)
		wantExactProblem(t, e.do(http.MethodGet, "/leads/987654/history"+q, e.user, nil), p)
	}
	wantExactProblem(t, e.do(http.MethodGet, "/leads/987654/history", e.user, nil), leadNotFound())
	wantProblem(t, e.do(http.MethodGet, lead+"/history", "", nil), http.StatusUnauthorized, "unauthenticated")

	// The cursor pages through the same entries.
	r = e.do(http.MethodGet, lead+"/history?per_page=3", e.user, nil)
	var first historyapi.HistoryPage
	if err := json.Unmarshal(r.body, &first); err != nil || r.status != http.StatusOK {
		t.Fatalf("first page: %d %s", r.status, r.body)
	}
	if len(first.Data) != 3 || !first.HasMore || first.NextBefore == nil || *first.NextBefore != first.Data[2].ID {
		t.Fatalf("first page: %s", r.body)
	}
	r = e.do(http.MethodGet, fmt.Sprintf("%s/history?per_page=3&before=%d", lead, *first.NextBefore), e.user, nil)
	var rest historyapi.HistoryPage
	if err := json.Unmarshal(r.body, &rest); err != nil || r.status != http.StatusOK {
		t.Fatalf("second page: %d %s", r.status, r.body)
	}
	got := []string{}
	for _, en := range append(first.Data, rest.Data...) {
		got = append(got, entryLine(en, "lead"))
	}
	if diff := cmp.Diff(e.history(t, id, e.user), got); rest.HasMore || diff != "" {
		t.Errorf("two pages (more after: %v), -whole +paged:\n%s", rest.HasMore, diff)
	}

	// A deleted lead's history is kept (its last values and its notes'
	// removal); its route answers as the lead's GET does.
	if r := e.do(http.MethodDelete, lead, uma, nil); r.status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	wantExactProblem(t, e.do(http.MethodGet, lead+"/history", e.admin, nil), leadNotFound())
	entries, _, err := history.List(t.Context(), e.db, "lead", id, history.Query{PerPage: 2})
	if err != nil {
		t.Fatal(err)
	}
	got = []string{}
	for _, en := range entries {
		got = append(got, entryLine(en, "lead"))
	}
	want = []string{
		fmt.Sprintf(`note deleted api user:1(Uma User) content="Call back"→null parent_id=%d→null parent_type="lead"→null`, id),
		`deleted api user:1(Uma User) assigned_to=3→null company="Acme"→null disqualify_reason="No budget"→null email="jane@example.com"→null first_name="Janet"→null last_name="Doe"→null phone="555-0100"→null status="disqualified"→null`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deletion entries (-want +got):\n%s", diff)
	}
	// An admin reads it through GET /history.
	adminPath := fmt.Sprintf("/history?object=lead&id=%d&per_page=2", id)
	r = e.do(http.MethodGet, adminPath, e.admin, nil)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"action":"deleted"`) || !strings.Contains(string(r.body), `"has_more":true`) {
		t.Errorf("admin history of the deleted lead: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodGet, adminPath, uma, nil); r.status != http.StatusForbidden {
		t.Errorf("a user's GET /history: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodGet, "/history?object=lead&id=987654", e.admin, nil); r.status != http.StatusNotFound {
		t.Errorf("a lead that never existed: %d %s", r.status, r.body)
	}
}

// TestIntakeLeadHistory: a lead created through the internal batch route
// for the public intake (the intake's leadsapi client sending its API key
// as the actor, via intake) is recorded as the key's, not the system's.
func TestIntakeLeadHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	key := int64(9)
	ctx := history.WithVia(history.WithActor(context.Background(),
		historyapi.HistoryActor{Type: historyapi.ActorAPIKey, ID: &key, Name: "Website form"}), historyapi.ViaIntake)
	res, err := leadsapi.New(srv.URL, secret).CreateLeads(ctx, []leadsapi.NewLead{{Key: "intake-1",
		Lead: leadsapi.LeadInput{FirstName: "Wendy", LastName: "Web", Email: patch.Of("wendy@example.com"), Source: patch.Of("public-api")}}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("create: %+v, %v", res, err)
	}
	want := []string{`created intake api_key:9(Website form) email=null→"wendy@example.com" first_name=null→"Wendy" last_name=null→"Web" source=null→"public-api" status=null→"new"`}
	if diff := cmp.Diff(want, e.history(t, res[0].ID, e.user)); diff != "" {
		t.Errorf("intake lead's history (-want +got):\n%s", diff)
	}
}

// TestQualificationHistory: a qualification's company, contact and deal
// are created for the qualifying user via qualification (the headers
// contacts and deals received), and the lead's own change is recorded so.
// A qualification interrupted (deals down) and retried later is a new
// request: what the retry creates is its caller's, what the first attempt
// created stays the first caller's.
func TestQualificationHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	team := int64(7)
	uma := e.named(1, "user", &team, "Uma User")
	ada := e.named(2, "admin", nil, "Ada Admin")
	id := e.createLead(map[string]any{"first_name": "Jane", "last_name": "Doe", "company": "Acme"})

	e.deals.failNextCreate()
	body := map[string]any{"create_company": true, "create_deal": true, "deal_stage_id": 2}
	if r := e.do(http.MethodPost, path("/leads/{id}/qualify", id), uma, body); r.status != http.StatusServiceUnavailable {
		t.Fatalf("qualify with deals failing: %d %s", r.status, r.body)
	}
	if c, co := e.contacts.Counts(); c != 1 || co != 1 || e.deals.fake.Count() != 0 {
		t.Fatalf("after the first attempt: %d contacts, %d companies, %d deals; want 1, 1, 0", c, co, e.deals.fake.Count())
	}
	r := e.do(http.MethodPost, path("/leads/{id}/qualify", id), ada, body)
	if r.status != http.StatusOK {
		t.Fatalf("qualify: %d %s", r.status, r.body)
	}
	m := r.json(t)
	company, contact, deal := int64(m["company_id"].(float64)), int64(m["contact_id"].(float64)), int64(m["deal_id"].(float64))

	byUma := `{"type":"user","id":1,"name":"Uma User"}`
	if got, want := e.contacts.CreatedBy(contactsapi.PathCompanies, company), (contactsapitest.Caller{Actor: byUma, Via: "qualification"}); got != want {
		t.Errorf("company created by %+v, want %+v", got, want)
	}
	if got, want := e.contacts.CreatedBy(contactsapi.PathContacts, contact), (contactsapitest.Caller{Actor: byUma, Via: "qualification"}); got != want {
		t.Errorf("contact created by %+v, want %+v", got, want)
	}
	byAda := dealsapitest.Caller{Actor: `{"type":"user","id":2,"name":"Ada Admin"}`, Via: "qualification"}
	if got := e.deals.fake.CreatedBy(deal); got != byAda {
		t.Errorf("deal created by %+v, want %+v", got, byAda)
	}
	want := []string{
		fmt.Sprintf(`updated qualification user:2(Ada Admin) company_id=null→%d contact_id=null→%d deal_id=null→%d qualified_at=null→<time> status="new"→"qualified"`,
			company, contact, deal),
		`created api user:1 company=null→"Acme" first_name=null→"Jane" last_name=null→"Doe" status=null→"new"`,
	}
	if diff := cmp.Diff(want, e.history(t, id, e.user)); diff != "" {
		t.Errorf("lead history (-want +got):\n%s", diff)
	}
}
