package api_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
)

// defineField creates a custom field of object as the admin.
func (e *env) defineField(t testing.TB, object string, body map[string]any) {
	t.Helper()
	wantStatus(t, e.do(t, "POST", "/properties/"+object, e.admin, body), 201)
}

// withFields defines the contact fields the tests share: a unique text
// erp_id, an enum tier, a multi_enum tags2, a number score, a date
// renewal, a boolean vip and a user owner2.
func (e *env) withFields(t testing.TB) {
	t.Helper()
	e.defineField(t, "contacts", map[string]any{"name": "erp_id", "label": "ERP id", "type": "text", "unique": true})
	e.defineField(t, "contacts", map[string]any{"name": "tier", "label": "Tier", "type": "enum",
		"options": []map[string]any{{"value": "gold"}, {"value": "silver"}, {"value": "old", "archived": true}}})
	e.defineField(t, "contacts", map[string]any{"name": "topics", "label": "Topics", "type": "multi_enum",
		"options": []map[string]any{{"value": "a"}, {"value": "b"}, {"value": "c"}}})
	e.defineField(t, "contacts", map[string]any{"name": "score", "label": "Score", "type": "number"})
	e.defineField(t, "contacts", map[string]any{"name": "renewal", "label": "Renewal", "type": "date"})
	e.defineField(t, "contacts", map[string]any{"name": "vip", "label": "VIP", "type": "boolean"})
	e.defineField(t, "contacts", map[string]any{"name": "owner2", "label": "Second owner", "type": "user"})
}

func TestPropertyRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do(t, "POST", "/properties/contacts", e.admin, map[string]any{"name": "erp_id", "label": "ERP id", "type": "text", "unique": true})
	wantStatus(t, r, 201)
	if r.Header.Get("Location") != "/api/properties/contacts/erp_id" || r.Body["message"] != "Property created" {
		t.Errorf("create: Location %q, body %v", r.Header.Get("Location"), r.Body)
	}
	if d := dataOf(t, r); d["object"] != "contacts" || d["unique"] != true || d["type"] != "text" {
		t.Errorf("created %v", d)
	}
	r = e.do(t, "GET", "/properties/contacts", e.admin, nil)
	wantStatus(t, r, 200)
	if list := r.Body["data"].([]any); len(list) != 1 || list[0].(map[string]any)["name"] != "erp_id" {
		t.Errorf("list %v", r.Body)
	}
	wantStatus(t, e.do(t, "GET", "/properties/contacts/erp_id", e.admin, nil), 200)
	r = e.do(t, "PUT", "/properties/contacts/erp_id", e.admin, map[string]any{"label": "ERP number"})
	wantStatus(t, r, 200)
	if dataOf(t, r)["label"] != "ERP number" {
		t.Errorf("updated %v", r.Body)
	}
	// Companies keep their own definitions.
	r = e.do(t, "GET", "/properties/companies", e.admin, nil)
	wantStatus(t, r, 200)
	if list := r.Body["data"].([]any); len(list) != 0 {
		t.Errorf("companies' definitions %v", list)
	}
	wantProblem(t, e.do(t, "GET", "/properties/contacts", e.user, nil), 403, "forbidden")
	wantProblem(t, e.do(t, "POST", "/properties/contacts", e.user, map[string]any{"name": "x", "label": "X", "type": "text"}), 403, "forbidden")

	for _, tt := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"built-in name", map[string]any{"name": "email", "label": "E", "type": "text"}, "name"},
		{"upper-case", map[string]any{"name": "Erp", "label": "E", "type": "text"}, "name"},
		{"duplicate", map[string]any{"name": "erp_id", "label": "E", "type": "text"}, "name"},
		{"enum without options", map[string]any{"name": "tier", "label": "T", "type": "enum"}, "options"},
		{"unique boolean", map[string]any{"name": "flag", "label": "F", "type": "boolean", "unique": true}, "unique"},
	} {
		wantProblem(t, e.do(t, "POST", "/properties/contacts", e.admin, tt.body), 422, "validation_failed", tt.field)
	}

	// A type change is refused while a record holds a value.
	wantStatus(t, e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": "A", "last_name": "B",
		"custom_fields": map[string]any{"erp_id": "E-1"}}), 201)
	wantProblem(t, e.do(t, "PUT", "/properties/contacts/erp_id", e.admin, map[string]any{"type": "number"}), 409, "property_has_values")

	r = e.do(t, "DELETE", "/properties/contacts/erp_id", e.admin, nil)
	wantStatus(t, r, 200)
	wantProblem(t, e.do(t, "GET", "/properties/contacts/erp_id", e.admin, nil), 404, "not_found")
	if n := e.count(t, `SELECT count(*) FROM contacts WHERE custom_fields ? 'erp_id'`); n != 0 {
		t.Errorf("%d contacts still hold erp_id", n)
	}
	if n := e.count(t, `SELECT count(*) FROM outbox WHERE type LIKE 'property.%'`); n != 3 {
		t.Errorf("%d property events, want 3 (created, updated, deleted; none for the refused change)", n)
	}
}

func TestCustomFieldWrites(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.withFields(t)
	r := e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": "Ada", "last_name": "L",
		"custom_fields": map[string]any{"erp_id": "E-1", "tier": "gold", "topics": []string{"b", "a", "b"}, "score": 12.50,
			"renewal": "2027-01-31", "vip": true, "owner2": otherID}})
	wantStatus(t, r, 201)
	cid := id(t, r)
	want := map[string]any{"erp_id": "E-1", "tier": "gold", "topics": []any{"b", "a"}, "score": "12.5",
		"renewal": "2027-01-31", "vip": true, "owner2": float64(otherID)}
	if diff := cmp.Diff(want, dataOf(t, r)["custom_fields"]); diff != "" {
		t.Errorf("created custom_fields (-want +got):\n%s", diff)
	}
	// A partial write: absent names keep, null and "" clear.
	r = e.do(t, "PUT", fmt.Sprintf("/contacts/%d", cid), e.user, map[string]any{"first_name": "Ada", "last_name": "L",
		"custom_fields": map[string]any{"tier": nil, "renewal": "", "score": "-0.50"}})
	wantStatus(t, r, 200)
	want["tier"], want["renewal"], want["score"] = nil, nil, "-0.5"
	if diff := cmp.Diff(want, dataOf(t, r)["custom_fields"]); diff != "" {
		t.Errorf("updated custom_fields (-want +got):\n%s", diff)
	}
	// Every read shows every defined name; events carry them.
	r = e.do(t, "GET", fmt.Sprintf("/contacts/%d", cid), e.user, nil)
	if diff := cmp.Diff(want, dataOf(t, r)["custom_fields"]); diff != "" {
		t.Errorf("read custom_fields (-want +got):\n%s", diff)
	}
	if n := e.count(t, `SELECT count(*) FROM outbox WHERE type = 'contact.updated' AND payload::jsonb->'custom_fields'->>'score' = '-0.5'
		AND payload::jsonb->'custom_fields' ? 'tier'`); n != 1 {
		t.Errorf("%d contact.updated events carrying the custom fields", n)
	}
	other := e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": "B", "last_name": "C"})
	wantStatus(t, other, 201)
	if cf := dataOf(t, other)["custom_fields"].(map[string]any); len(cf) != 7 || cf["erp_id"] != nil {
		t.Errorf("a contact without values reads %v", cf)
	}

	for _, tt := range []struct {
		name  string
		cf    map[string]any
		field string
	}{
		{"unknown name", map[string]any{"nope": "x"}, "custom_fields.nope"},
		{"wrong type", map[string]any{"vip": "maybe"}, "custom_fields.vip"},
		{"number as text", map[string]any{"score": "twelve"}, "custom_fields.score"},
		{"not an option", map[string]any{"tier": "bronze"}, "custom_fields.tier"},
		{"archived option", map[string]any{"tier": "old"}, "custom_fields.tier"},
		{"not an option of many", map[string]any{"topics": []string{"a", "z"}}, "custom_fields.topics"},
		{"unknown user", map[string]any{"owner2": unknownU}, "custom_fields.owner2"},
		{"bad date", map[string]any{"renewal": "31/01/2027"}, "custom_fields.renewal"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantProblem(t, e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": "X", "last_name": "Y",
				"custom_fields": tt.cf}), 422, "validation_failed", tt.field)
			wantProblem(t, e.do(t, "PUT", fmt.Sprintf("/contacts/%d", cid), e.user, map[string]any{"first_name": "X", "last_name": "Y",
				"custom_fields": tt.cf}), 422, "validation_failed", tt.field)
		})
	}
	// A unique value another contact holds: 409 naming the field and the holder.
	r = e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": "X", "last_name": "Y", "custom_fields": map[string]any{"erp_id": "E-1"}})
	wantProblem(t, r, 409, "duplicate_value", "custom_fields.erp_id")
	if r.Body["existing_id"] != float64(cid) {
		t.Errorf("existing_id %v, want %d", r.Body["existing_id"], cid)
	}
	r = e.do(t, "PUT", fmt.Sprintf("/contacts/%d", id(t, other)), e.user, map[string]any{"first_name": "B", "last_name": "C",
		"custom_fields": map[string]any{"erp_id": "E-1"}})
	wantProblem(t, r, 409, "duplicate_value", "custom_fields.erp_id")
	// A deleted contact releases its value.
	wantStatus(t, e.do(t, "DELETE", fmt.Sprintf("/contacts/%d", cid), e.user, nil), 200)
	wantStatus(t, e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": "X", "last_name": "Y",
		"custom_fields": map[string]any{"erp_id": "E-1"}}), 201)

	// Companies have their own fields.
	e.defineField(t, "companies", map[string]any{"name": "duns", "label": "DUNS", "type": "text", "unique": true})
	co := e.do(t, "POST", "/companies", e.user, map[string]any{"name": "Acme", "custom_fields": map[string]any{"duns": "123"}})
	wantStatus(t, co, 201)
	if diff := cmp.Diff(map[string]any{"duns": "123"}, dataOf(t, co)["custom_fields"]); diff != "" {
		t.Errorf("company custom_fields (-want +got):\n%s", diff)
	}
	wantProblem(t, e.do(t, "POST", "/companies", e.user, map[string]any{"name": "Acme 2", "custom_fields": map[string]any{"duns": "123"}}),
		409, "duplicate_value", "custom_fields.duns")
	wantProblem(t, e.do(t, "POST", "/companies", e.user, map[string]any{"name": "Acme 2", "custom_fields": map[string]any{"tier": "gold"}}),
		422, "validation_failed", "custom_fields.tier")
	r = e.do(t, "GET", "/companies/123?id_property=duns", e.user, nil)
	wantStatus(t, r, 200)
	if id(t, r) != id(t, co) {
		t.Errorf("company by duns %v", r.Body)
	}
}

func TestCustomFieldListFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.withFields(t)
	rows := []struct {
		status string
		cf     map[string]any
	}{
		{"active", map[string]any{"tier": "gold", "score": "10", "topics": []string{"a", "b"}, "vip": true}},
		{"active", map[string]any{"tier": "silver", "score": "2.5", "topics": []string{"a"}}},
		{"active", map[string]any{"tier": "gold", "score": "7", "renewal": "2027-03-01"}},
		{"inactive", map[string]any{"tier": "gold", "score": "100", "topics": []string{"a", "b", "c"}}},
		{"active", map[string]any{}},
	}
	names := map[float64]int{}
	for i, r := range rows {
		resp := e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": fmt.Sprint("N", i), "last_name": "L",
			"status": r.status, "custom_fields": r.cf})
		wantStatus(t, resp, 201)
		names[float64(id(t, resp))] = i
	}
	list := func(q string) (order []int, total float64) {
		t.Helper()
		r := e.do(t, "GET", "/contacts?"+q, e.user, nil)
		wantStatus(t, r, 200)
		for _, c := range r.Body["data"].([]any) {
			order = append(order, names[c.(map[string]any)["id"].(float64)])
		}
		return order, r.Body["total"].(float64)
	}
	for _, tt := range []struct {
		query string
		want  []int
	}{
		{"cf[tier]=gold&status=active&sort_by=cf.score", []int{2, 0}},
		{"cf[tier]=gold,silver&sort_by=cf.score&sort_dir=desc", []int{3, 0, 2, 1}},
		{"cf[topics]=a,b&status=active", []int{0}},
		{"cf[topics]=a,b", []int{0, 3}},
		{"cf[score][gte]=5&cf[score][lte]=10&sort_by=cf.score", []int{2, 0}},
		{"cf[vip]=true", []int{0}},
		{"cf[renewal][empty]=false", []int{2}},
		{"cf[tier][empty]=true", []int{4}},
		{"cf[score][gte]=3&per_page=1&page=2&sort_by=cf.score", []int{0}},
		{"cf[tier]=gold&search=N3", []int{3}},
	} {
		got, total := list(url.PathEscape(tt.query))
		wantTotal := len(tt.want)
		if tt.query == "cf[score][gte]=3&per_page=1&page=2&sort_by=cf.score" {
			wantTotal = 3
		}
		if diff := cmp.Diff(tt.want, got); diff != "" || int(total) != wantTotal {
			t.Errorf("%s: total %v, want %d; order (-want +got):\n%s", tt.query, total, wantTotal, diff)
		}
	}
	wantProblem(t, e.do(t, "GET", "/contacts?cf%5Bnope%5D=1", e.user, nil), 422, "validation_failed", "cf[nope]")
	wantProblem(t, e.do(t, "GET", "/contacts?cf%5Btier%5D%5Bgte%5D=gold", e.user, nil), 422, "validation_failed", "cf[tier][gte]")
	wantProblem(t, e.do(t, "GET", "/contacts?sort_by=cf.nope", e.user, nil), 422, "validation_failed", "sort_by")
	wantProblem(t, e.do(t, "GET", "/companies?cf%5Btier%5D=gold", e.user, nil), 422, "validation_failed", "cf[tier]")
}

// TestInternalCreateTakesCustomFields: lead qualification sends the
// lead's custom fields with the contact; they are checked as any write's.
func TestInternalCreateTakesCustomFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.withFields(t)
	r := e.internal(t, "POST", "/internal/contacts", "q-1", map[string]any{"first_name": "Ada", "last_name": "L",
		"custom_fields": map[string]any{"tier": "gold", "score": 3}})
	wantStatus(t, r, 201)
	cf := dataOf(t, r)["custom_fields"].(map[string]any)
	if cf["tier"] != "gold" || cf["score"] != "3" {
		t.Errorf("custom_fields %v", cf)
	}
	wantProblem(t, e.internal(t, "POST", "/internal/contacts", "q-2", map[string]any{"first_name": "Ada", "last_name": "L",
		"custom_fields": map[string]any{"nope": "x"}}), 422, "validation_failed", "custom_fields.nope")
	wantProblem(t, e.internal(t, "POST", "/internal/contacts", "q-3", map[string]any{"first_name": "Ada", "last_name": "L",
		"custom_fields": map[string]any{"score": "lots"}}), 422, "validation_failed", "custom_fields.score")
}

// TestInternalCompanyCreateTakesCustomFields: POST /internal/companies
// takes contactsapi.CreateCompanyRequest's custom_fields and checks them
// against the companies' definitions as POST /internal/contacts checks a
// contact's: an unknown name is the exact 422, a defined one reads back.
func TestInternalCompanyCreateTakesCustomFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.defineField(t, "companies", map[string]any{"name": "duns", "label": "DUNS", "type": "text", "unique": true})
	req := contactsapi.CreateCompanyRequest{Name: "Acme", CustomFields: map[string]json.RawMessage{"nope": json.RawMessage(`"x"`)}}
	wantExact(t, e.internal(t, "POST", "/internal/companies", "co-1", req), 422,
		invalid("custom_fields.nope", "is not a custom field of this record type"))

	req.CustomFields = map[string]json.RawMessage{"duns": json.RawMessage(`"123"`)}
	r := e.internal(t, "POST", "/internal/companies", "co-1", req)
	wantStatus(t, r, 201)
	r = e.internal(t, "GET", fmt.Sprintf("/internal/companies/%d", id(t, r)), "", nil)
	wantStatus(t, r, 200)
	if diff := cmp.Diff(map[string]any{"duns": "123"}, dataOf(t, r)["custom_fields"]); diff != "" {
		t.Errorf("company custom_fields (-want +got):\n%s", diff)
	}
}
