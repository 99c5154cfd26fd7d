package api_test

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
)

var tsShape = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

func TestContactLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	co := e.do(t, "POST", "/companies", e.user, map[string]any{"name": "Acme, Inc.", "domain": "acme.test"})
	wantStatus(t, co, 201)
	companyID := id(t, co)

	r := e.do(t, "POST", "/contacts", e.user, map[string]any{
		"first_name": " Ada ", "last_name": "Lovelace", "email": "ada@acme.test", "phone": "+1 555 0100",
		"company_id": companyID, "tags": "vip, vip ,  b2b,", "assigned_to": userID, "notes": "met at expo",
		"id": 77, "company_name": "ignored", "created_at": "1999-01-01",
	})
	wantStatus(t, r, 201)
	if r.Body["success"] != true || r.Body["message"] != "Contact created" {
		t.Errorf("envelope %v", r.Body)
	}
	c := dataOf(t, r)
	cid := id(t, r)
	want := map[string]any{
		"first_name": "Ada", "last_name": "Lovelace", "email": "ada@acme.test", "phone": "+1 555 0100",
		"mobile": nil, "job_title": nil, "company_id": float64(companyID), "company_name": "Acme, Inc.",
		"address_street": nil, "address_city": nil, "address_state": nil, "address_zip": nil, "address_country": nil,
		"notes": "met at expo", "tags": "vip,b2b", "status": "active", "source": nil, "assigned_to": float64(userID),
	}
	got := map[string]any{}
	for k := range want {
		got[k] = c[k]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("created contact (-want +got):\n%s", diff)
	}
	if c["id"] == float64(77) || !tsShape.MatchString(c["created_at"].(string)) || !tsShape.MatchString(c["updated_at"].(string)) {
		t.Errorf("read-only fields: %v", c)
	}

	r = e.do(t, "GET", fmt.Sprintf("/contacts/%d", cid), e.other, nil)
	wantStatus(t, r, 200)
	if _, ok := r.Body["message"]; ok || r.Body["success"] != true || dataOf(t, r)["company_name"] != "Acme, Inc." {
		t.Errorf("read envelope %v", r.Body)
	}

	// PUT: absent keeps, null and "" clear, status reset, required names.
	r = e.do(t, "PUT", fmt.Sprintf("/contacts/%d", cid), e.user, map[string]any{
		"first_name": "Augusta Ada", "last_name": "King", "phone": nil, "notes": "", "status": "inactive", "company_id": nil,
	})
	wantStatus(t, r, 200)
	u := dataOf(t, r)
	if r.Body["message"] != "Contact updated" || u["first_name"] != "Augusta Ada" || u["email"] != "ada@acme.test" ||
		u["phone"] != nil || u["notes"] != nil || u["status"] != "inactive" || u["tags"] != "vip,b2b" ||
		u["company_id"] != nil || u["company_name"] != nil || u["assigned_to"] != float64(userID) {
		t.Errorf("updated %v", u)
	}

	// Notes and tasks, then a permanent delete takes them along.
	wantStatus(t, e.do(t, "POST", fmt.Sprintf("/contacts/%d/notes", cid), e.user, map[string]any{"content": "hello"}), 201)
	wantStatus(t, e.do(t, "POST", fmt.Sprintf("/contacts/%d/tasks", cid), e.user, map[string]any{"title": "call"}), 201)
	r = e.do(t, "DELETE", fmt.Sprintf("/contacts/%d", cid), e.user, nil)
	wantStatus(t, r, 200)
	if diff := cmp.Diff(map[string]any{"success": true, "message": "Contact deleted"}, r.Body); diff != "" {
		t.Errorf("delete body (-want +got):\n%s", diff)
	}
	wantProblem(t, e.do(t, "GET", fmt.Sprintf("/contacts/%d", cid), e.user, nil), 404, "not_found")
	if n := e.count(t, `SELECT (SELECT count(*) FROM notes) + (SELECT count(*) FROM tasks)`); n != 0 {
		t.Errorf("%d notes/tasks left after delete", n)
	}
	types := e.count(t, `SELECT count(DISTINCT type) FROM outbox WHERE stream = 'crm:events:contacts' AND type LIKE 'contact.%' AND aggregate_id = $1`, fmt.Sprint(cid))
	if types != 3 {
		t.Errorf("want created, updated and deleted events, got %d types", types)
	}
}

// TestContactValidation: each write route answers a refused body as 422
// validation_failed naming the fields. The rules themselves, case by case
// for every write, are TestContactWriteRules in the domain; these cases
// are one rule checked in the body, one checked against stored records
// (company and user read model) and one the JSON decoding refuses.
func TestContactValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name   string
		body   map[string]any
		fields []string
	}{
		{"missing names", map[string]any{"email": "a@b.test"}, []string{"first_name", "last_name"}},
		{"unknown company", map[string]any{"first_name": "A", "last_name": "B", "company_id": 424242}, []string{"company_id"}},
		{"unknown assignee", map[string]any{"first_name": "A", "last_name": "B", "assigned_to": unknownU}, []string{"assigned_to"}},
		{"wrong type", map[string]any{"first_name": "A", "last_name": "B", "company_id": "seven"}, []string{"company_id"}},
	}
	existing := id(t, e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": "Keep", "last_name": "Me"}))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantProblem(t, e.do(t, "POST", "/contacts", e.user, tc.body), 422, "validation_failed", tc.fields...)
			wantProblem(t, e.do(t, "PUT", fmt.Sprintf("/contacts/%d", existing), e.user, tc.body), 422, "validation_failed", tc.fields...)
			wantProblem(t, e.internal(t, "POST", contactsapi.PathContacts, "", tc.body), 422, "validation_failed", tc.fields...)
		})
	}
	t.Run("malformed json", func(t *testing.T) {
		t.Parallel()
		req := e.do(t, "POST", "/contacts", e.user, nil)
		wantProblem(t, req, 415, "unsupported_media_type")
	})
	t.Run("not found and unauthenticated", func(t *testing.T) {
		t.Parallel()
		for _, m := range []string{"GET", "PUT", "DELETE"} {
			wantProblem(t, e.do(t, m, "/contacts/987654", e.user, map[string]any{"first_name": "A", "last_name": "B"}), 404, "not_found")
			wantProblem(t, e.do(t, m, "/contacts/abc", e.user, map[string]any{"first_name": "A", "last_name": "B"}), 404, "not_found")
		}
		wantProblem(t, e.do(t, "GET", "/contacts", "", nil), 401, "unauthenticated")
		wantProblem(t, e.do(t, "GET", "/nowhere", e.user, nil), 404, "not_found")
	})
}

func TestContactList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acme := id(t, e.do(t, "POST", "/companies", e.user, map[string]any{"name": "Acme"}))
	globex := id(t, e.do(t, "POST", "/companies", e.user, map[string]any{"name": "Globex"}))
	seed := []map[string]any{
		{"first_name": "Ada", "last_name": "Lovelace", "email": "ada@x.test", "phone": "555-0001", "company_id": acme, "assigned_to": adminID, "source": "web"},
		{"first_name": "Alan", "last_name": "Turing", "email": "alan@y.test", "mobile": "0777 123", "company_id": globex, "assigned_to": userID, "status": "inactive"},
		{"first_name": "Grace", "last_name": "Hopper", "email": "GRACE@navy.test", "assigned_to": otherID, "source": "web"},
		{"first_name": "Ada", "last_name": "Byron", "phone": "555-0002", "assigned_to": loneID},
		{"first_name": "100%", "last_name": "Under_score"},
	}
	ids := make([]int64, len(seed))
	for i, s := range seed {
		ids[i] = id(t, e.do(t, "POST", "/contacts", e.user, s))
	}
	list := func(t *testing.T, token, query string) ([]int64, map[string]any) {
		t.Helper()
		r := e.do(t, "GET", "/contacts?"+query, token, nil)
		wantStatus(t, r, 200)
		var got []int64
		for _, d := range r.Body["data"].([]any) {
			got = append(got, int64(d.(map[string]any)["id"].(float64)))
		}
		delete(r.Body, "data")
		return got, r.Body
	}
	tests := []struct {
		name  string
		token string
		query string
		want  []int64
	}{
		{"default sort by name", e.user, "", []int64{ids[4], ids[3], ids[0], ids[1], ids[2]}},
		{"name desc", e.user, "sort_dir=desc", []int64{ids[2], ids[1], ids[0], ids[3], ids[4]}},
		{"search first name", e.user, "search=ADA", []int64{ids[3], ids[0]}},
		{"search full name", e.user, "search=ada%20love", []int64{ids[0]}},
		{"search email case-insensitive", e.user, "search=grace@NAVY", []int64{ids[2]}},
		{"search phone", e.user, "search=555-000", []int64{ids[3], ids[0]}},
		{"search mobile", e.user, "search=0777", []int64{ids[1]}},
		{"search company", e.user, "search=globe", []int64{ids[1]}},
		{"search wildcard literal", e.user, "search=100%25", []int64{ids[4]}},
		{"search underscore literal", e.user, "search=r_s", []int64{ids[4]}},
		{"status", e.user, "status=inactive", []int64{ids[1]}},
		{"company", e.user, fmt.Sprintf("company_id=%d", acme), []int64{ids[0]}},
		{"assigned", e.user, fmt.Sprintf("assigned_to=%d", otherID), []int64{ids[2]}},
		{"source", e.user, "source=web", []int64{ids[0], ids[2]}},
		{"dates inclusive", e.user, "date_from=2000-01-01&date_to=2999-12-31", []int64{ids[4], ids[3], ids[0], ids[1], ids[2]}},
		{"dates in the past", e.user, "date_to=2000-01-01", nil},
		{"scope me", e.user, "scope=me", []int64{ids[1]}},
		{"scope team", e.user, "scope=team", []int64{ids[0], ids[1]}},
		{"scope team of other", e.other, "scope=team", []int64{ids[2]}},
		{"scope company", e.user, "scope=company&sort_by=created_at", ids},
		{"sort email", e.user, "sort_by=email", []int64{ids[0], ids[1], ids[2], ids[3], ids[4]}},
		{"sort email desc nulls first", e.user, "sort_by=email&sort_dir=DESC", []int64{ids[4], ids[3], ids[2], ids[1], ids[0]}},
		{"sort phone", e.user, "sort_by=phone", []int64{ids[0], ids[3], ids[1], ids[2], ids[4]}},
		{"sort company", e.user, "sort_by=company_name", []int64{ids[0], ids[1], ids[2], ids[3], ids[4]}},
		{"sort status tie by id", e.user, "sort_by=status", []int64{ids[0], ids[2], ids[3], ids[4], ids[1]}},
		{"sort created desc", e.user, "sort_by=created_at&sort_dir=desc", []int64{ids[4], ids[3], ids[2], ids[1], ids[0]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, _ := list(t, tc.token, tc.query)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("envelope", func(t *testing.T) {
		t.Parallel()
		got, env := list(t, e.user, "per_page=2&page=2")
		if diff := cmp.Diff(map[string]any{"current_page": 2.0, "last_page": 3.0, "per_page": 2.0, "total": 5.0}, env); diff != "" {
			t.Errorf("envelope (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]int64{ids[0], ids[1]}, got); diff != "" {
			t.Errorf("page 2 (-want +got):\n%s", diff)
		}
		r := e.do(t, "GET", "/contacts?page=9", e.user, nil)
		if diff := cmp.Diff(map[string]any{"data": []any{}, "current_page": 9.0, "last_page": 1.0, "per_page": 25.0, "total": 5.0}, r.Body); diff != "" {
			t.Errorf("past the end (-want +got):\n%s", diff)
		}
		// Pages past every integer range are empty pages with the true
		// totals, never a 422 from an overflowing SQL offset.
		for _, page := range []struct {
			query string
			want  float64
		}{
			{"page=85899346", 85899346}, {"page=85899346&sort_by=status", 85899346},
			{"page=2147483648", math.MaxInt32}, {"page=99999999999999999999999", math.MaxInt32},
		} {
			r := e.do(t, "GET", "/contacts?"+page.query, e.user, nil)
			if diff := cmp.Diff(map[string]any{"data": []any{}, "current_page": page.want, "last_page": 1.0, "per_page": 25.0, "total": 5.0}, r.Body); diff != "" {
				t.Errorf("%s (-want +got):\n%s", page.query, diff)
			}
		}
		_, env = list(t, e.user, "per_page=1000")
		if env["per_page"] != 100.0 {
			t.Errorf("per_page not clamped: %v", env)
		}
	})
	bad := []struct{ query, field string }{
		{"per_page=abc", "per_page"}, {"per_page=0", "per_page"}, {"page=0", "page"}, {"page=x", "page"},
		{"sort_by=salary", "sort_by"}, {"sort_dir=up", "sort_dir"}, {"date_from=2024-13-01", "date_from"},
		{"date_to=yesterday", "date_to"}, {"date_from=2024-02-02&date_to=2024-02-01", "date_to"},
		{"status=archived", "status"}, {"scope=world", "scope"}, {"company_id=abc", "company_id"},
		{"assigned_to=-4", "assigned_to"}, {"search=" + url.QueryEscape(strings.Repeat("s", 201)), "search"},
	}
	for _, b := range bad {
		t.Run("bad "+b.query, func(t *testing.T) {
			t.Parallel()
			wantProblem(t, e.do(t, "GET", "/contacts?"+b.query, e.user, nil), 422, "validation_failed", b.field)
		})
	}
}

func TestCompanies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do(t, "POST", "/companies", e.user, map[string]any{"name": "Initech", "domain": "initech.test",
		"website": "https://initech.test", "phone": "1", "industry": "Software", "address_city": "Austin"})
	wantStatus(t, r, 201)
	co := dataOf(t, r)
	for _, k := range []string{"id", "name", "domain", "website", "phone", "industry", "address_street", "address_city",
		"address_state", "address_zip", "address_country", "created_at", "updated_at"} {
		if _, ok := co[k]; !ok {
			t.Errorf("company lacks %s: %v", k, co)
		}
	}
	cid := id(t, r)
	contact := id(t, e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": "Peter", "last_name": "Gibbons", "company_id": cid}))

	r = e.do(t, "PUT", fmt.Sprintf("/companies/%d", cid), e.user, map[string]any{"name": "Initrode", "phone": nil})
	wantStatus(t, r, 200)
	if d := dataOf(t, r); d["name"] != "Initrode" || d["phone"] != nil || d["domain"] != "initech.test" {
		t.Errorf("updated company %v", d)
	}
	if got := dataOf(t, e.do(t, "GET", fmt.Sprintf("/contacts/%d", contact), e.user, nil))["company_name"]; got != "Initrode" {
		t.Errorf("rename not propagated: %v", got)
	}
	r = e.do(t, "GET", "/contacts?search=initrode", e.user, nil)
	if r.Body["total"] != 1.0 {
		t.Errorf("search by new company name: %v", r.Body)
	}
	r = e.do(t, "GET", "/companies?search=SOFTW", e.user, nil)
	if r.Body["total"] != 1.0 || r.Body["per_page"] != 25.0 {
		t.Errorf("company search: %v", r.Body)
	}
	wantProblem(t, e.do(t, "GET", "/companies?sort_by=revenue", e.user, nil), 422, "validation_failed", "sort_by")
	wantProblem(t, e.do(t, "POST", "/companies", e.user, map[string]any{"domain": "x"}), 422, "validation_failed", "name")
	wantProblem(t, e.do(t, "POST", "/companies", e.user, map[string]any{"name": strings.Repeat("n", 256)}), 422, "validation_failed", "name")
	wantProblem(t, e.do(t, "PUT", fmt.Sprintf("/companies/%d", cid), e.user, map[string]any{"name": ""}), 422, "validation_failed", "name")

	wantStatus(t, e.do(t, "DELETE", fmt.Sprintf("/companies/%d", cid), e.user, nil), 200)
	c := dataOf(t, e.do(t, "GET", fmt.Sprintf("/contacts/%d", contact), e.user, nil))
	if c["company_id"] != nil || c["company_name"] != nil {
		t.Errorf("contact not unlinked: %v", c)
	}
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		wantProblem(t, e.do(t, m, fmt.Sprintf("/companies/%d", cid), e.user, map[string]any{"name": "x"}), 404, "not_found")
	}
}

func TestNotesAndTasksBelongToTheirContact(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := id(t, e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": "A", "last_name": "A"}))
	b := id(t, e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": "B", "last_name": "B"}))
	note := id(t, e.do(t, "POST", fmt.Sprintf("/contacts/%d/notes", a), e.user, map[string]any{"content": "x"}))
	task := id(t, e.do(t, "POST", fmt.Sprintf("/contacts/%d/tasks", a), e.user, map[string]any{"title": "t", "assigned_to": userID}))
	wantProblem(t, e.do(t, "DELETE", fmt.Sprintf("/contacts/%d/notes/%d", b, note), e.user, nil), 404, "not_found")
	wantProblem(t, e.do(t, "PUT", fmt.Sprintf("/contacts/%d/tasks/%d", b, task), e.user, map[string]any{"title": "x"}), 404, "not_found")
	wantProblem(t, e.do(t, "DELETE", fmt.Sprintf("/contacts/%d/tasks/%d", b, task), e.user, nil), 404, "not_found")
	wantProblem(t, e.do(t, "GET", "/contacts/999999/notes", e.user, nil), 404, "not_found")
	wantProblem(t, e.do(t, "POST", fmt.Sprintf("/contacts/%d/tasks", a), e.user, map[string]any{"title": "t", "assigned_to": unknownU}), 422, "validation_failed", "assigned_to")

	r := e.do(t, "PUT", fmt.Sprintf("/contacts/%d/tasks/%d", a, task), e.user, map[string]any{"title": "t2", "status": "completed"})
	wantStatus(t, r, 200)
	if d := dataOf(t, r); d["status"] != "completed" || d["completed_at"] == nil || d["contact_id"] != float64(a) {
		t.Errorf("task %v", d)
	}
	r = e.do(t, "GET", fmt.Sprintf("/contacts/%d/notes", a), e.user, nil)
	if l, _ := r.Body["data"].([]any); len(l) != 1 || r.Body["success"] != true {
		t.Errorf("notes %v", r.Body)
	}
	wantStatus(t, e.do(t, "DELETE", fmt.Sprintf("/contacts/%d/notes/%d", a, note), e.user, nil), 200)
	r = e.do(t, "GET", fmt.Sprintf("/contacts/%d/tasks", b), e.user, nil)
	if l, ok := r.Body["data"].([]any); !ok || len(l) != 0 {
		t.Errorf("tasks of b %s", r.Raw)
	}
}

func TestInternalAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Unauthenticated without the secret.
	req := e.do(t, "GET", contactsapi.ContactPath(1), e.admin, nil)
	wantProblem(t, req, 401, "unauthenticated")

	body := map[string]any{"name": "Acme, Inc.", "domain": "acme.test"}
	r := e.internal(t, "POST", contactsapi.PathCompanies, "co-1", body)
	wantStatus(t, r, 201)
	acme := id(t, r)
	if _, ok := r.Body["success"]; ok {
		t.Errorf("internal body should be {data}: %s", r.Raw)
	}
	again := e.internal(t, "POST", contactsapi.PathCompanies, "co-1", body)
	wantStatus(t, again, 201)
	if again.Header.Get("Idempotent-Replayed") != "true" || id(t, again) != acme {
		t.Errorf("replay: %v %s", again.Header, again.Raw)
	}
	wantProblem(t, e.internal(t, "POST", contactsapi.PathCompanies, "co-1", map[string]any{"name": "Other"}), 409, "idempotency_key_reused")
	if n := e.count(t, `SELECT count(*) FROM companies`); n != 1 {
		t.Errorf("%d companies after replay", n)
	}
	e.internal(t, "POST", contactsapi.PathCompanies, "co-2", map[string]any{"name": "Acme Holdings International"})
	e.internal(t, "POST", contactsapi.PathCompanies, "co-3", map[string]any{"name": "Globex"})

	r = e.internal(t, "GET", contactsapi.PathMatchCompanies+"?name="+url.QueryEscape("ACME inc."), "", nil)
	wantStatus(t, r, 200)
	matches := r.Body["data"].([]any)
	if len(matches) != 1 || matches[0].(map[string]any)["name"] != "Acme, Inc." || matches[0].(map[string]any)["score"] != 1.0 {
		t.Errorf("matches %s", r.Raw)
	}
	r = e.internal(t, "GET", contactsapi.PathMatchCompanies+"?name=acme&limit=5", "", nil)
	matches = r.Body["data"].([]any)
	if len(matches) != 2 || matches[0].(map[string]any)["name"] != "Acme, Inc." || matches[1].(map[string]any)["name"] != "Acme Holdings International" {
		t.Errorf("matches of a prefix %s", r.Raw)
	}
	wantProblem(t, e.internal(t, "GET", contactsapi.PathMatchCompanies, "", nil), 422, "validation_failed", "name")
	wantProblem(t, e.internal(t, "GET", contactsapi.PathMatchCompanies+"?name=a&limit=0", "", nil), 422, "validation_failed", "limit")
	wantProblem(t, e.internal(t, "GET", contactsapi.PathMatchCompanies+"?name=a&limit=x", "", nil), 422, "validation_failed", "limit")

	// The company's primary contact is its earliest.
	r = e.internal(t, "GET", contactsapi.CompanyPath(acme), "", nil)
	if d := dataOf(t, r); d["primary_contact"] != nil || d["name"] != "Acme, Inc." {
		t.Errorf("company without contacts %s", r.Raw)
	}
	cbody := map[string]any{"first_name": "Wile", "last_name": "Coyote", "email": "Wile@Acme.test", "company_id": acme}
	first := e.internal(t, "POST", contactsapi.PathContacts, "c-1", cbody)
	wantStatus(t, first, 201)
	wantStatus(t, e.internal(t, "POST", contactsapi.PathContacts, "c-1", cbody), 201)
	wantStatus(t, e.internal(t, "POST", contactsapi.PathContacts, "c-2", map[string]any{"first_name": "Road", "last_name": "Runner", "company_id": acme}), 201)
	r = e.internal(t, "GET", contactsapi.CompanyPath(acme), "", nil)
	if pc, _ := dataOf(t, r)["primary_contact"].(map[string]any); pc == nil || pc["id"] != float64(id(t, first)) {
		t.Errorf("primary contact %s", r.Raw)
	}
	r = e.internal(t, "GET", contactsapi.PathMatchContacts+"?email=wile@acme.TEST", "", nil)
	if l := r.Body["data"].([]any); len(l) != 1 {
		t.Errorf("email match %s", r.Raw)
	}
	r = e.internal(t, "GET", contactsapi.PathMatchContacts+"?email=nobody@acme.test", "", nil)
	if l, ok := r.Body["data"].([]any); !ok || len(l) != 0 {
		t.Errorf("no match should be [] %s", r.Raw)
	}
	wantProblem(t, e.internal(t, "GET", contactsapi.PathMatchContacts, "", nil), 422, "validation_failed", "email")
	r = e.internal(t, "GET", contactsapi.ContactPath(id(t, first)), "", nil)
	if dataOf(t, r)["company_name"] != "Acme, Inc." {
		t.Errorf("internal read %s", r.Raw)
	}
	wantProblem(t, e.internal(t, "GET", contactsapi.ContactPath(99999), "", nil), 404, "not_found")
	wantProblem(t, e.internal(t, "GET", contactsapi.CompanyPath(99999), "", nil), 404, "not_found")
	if n := e.count(t, `SELECT count(*) FROM contacts`); n != 2 {
		t.Errorf("%d contacts after replay, want 2", n)
	}
	if n := e.count(t, `SELECT count(*) FROM outbox WHERE type = 'company.created'`); n != 3 {
		t.Errorf("%d company.created events", n)
	}
	_ = http.StatusOK
}

// TestUnroutedRequests: a known path with another method is 405 with
// Allow, an unknown path 404, both as problem+json.
func TestUnroutedRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do(t, "PATCH", "/contacts/1", e.user, map[string]any{"first_name": "x"})
	wantProblem(t, r, 405, "method_not_allowed")
	if got := r.Header.Get("Allow"); got != "DELETE, GET, HEAD, PUT" {
		t.Errorf("Allow = %q", got)
	}
	wantProblem(t, e.do(t, "GET", "/contactz", e.user, nil), 404, "not_found")
}
