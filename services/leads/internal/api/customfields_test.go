package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/outbox"
)

// define creates a custom field of leads as the admin.
func (e *env) define(body map[string]any) {
	e.t.Helper()
	if r := e.do("POST", "/properties/leads", e.admin, body); r.status != http.StatusCreated {
		e.t.Fatalf("define %v: %d %s", body["name"], r.status, r.body)
	}
}

// defineAll gives leads the fields the tests use: a unique text external
// id, a number, an enum, a multi_enum, a boolean, a date and a user.
func (e *env) defineAll() {
	e.t.Helper()
	for _, d := range []map[string]any{
		{"name": "erp_id", "label": "ERP id", "type": "text", "unique": true},
		{"name": "budget", "label": "Budget", "type": "number"},
		{"name": "tier", "label": "Tier", "type": "enum", "options": []map[string]any{{"value": "gold", "label": "Gold"}, {"value": "silver", "label": "Silver"},
			{"value": "bronze_old", "label": "Bronze", "archived": true}}},
		{"name": "topics", "label": "Topics", "type": "multi_enum", "options": []map[string]any{{"value": "crm"}, {"value": "erp"}, {"value": "bi"}}},
		{"name": "vip", "label": "VIP", "type": "boolean"},
		{"name": "met_on", "label": "Met on", "type": "date"},
		{"name": "owner", "label": "Owner", "type": "user"},
	} {
		e.define(d)
	}
}

func data(t testing.TB, r resp) map[string]any {
	t.Helper()
	d, ok := r.json(t)["data"].(map[string]any)
	if !ok {
		t.Fatalf("no data object: %d %s", r.status, r.body)
	}
	return d
}

func TestPropertyRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	r := e.do("POST", "/properties/leads", e.admin, map[string]any{"name": "erp_id", "label": "ERP id", "type": "text", "unique": true})
	if r.status != http.StatusCreated || r.header.Get("Location") != "/api/properties/leads/erp_id" {
		t.Fatalf("create: %d %q %s", r.status, r.header.Get("Location"), r.body)
	}
	if d := data(t, r); d["object"] != "leads" || d["name"] != "erp_id" || d["unique"] != true {
		t.Fatalf("created: %v", d)
	}
	if r := e.do("GET", "/properties/leads", e.admin, nil); r.status != http.StatusOK || len(r.json(t)["data"].([]any)) != 1 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/properties/leads/erp_id", e.admin, nil); r.status != http.StatusOK || data(t, r)["label"] != "ERP id" {
		t.Fatalf("get: %d %s", r.status, r.body)
	}
	if r := e.do("PUT", "/properties/leads/erp_id", e.admin, map[string]any{"label": "ERP key"}); r.status != http.StatusOK || data(t, r)["label"] != "ERP key" {
		t.Fatalf("put: %d %s", r.status, r.body)
	}
	wantExactProblem(t, e.do("GET", "/properties/leads", e.user, nil),
		problemJSON(403, "forbidden", "this action requires the admin role"))
	wantExactProblem(t, e.do("POST", "/properties/leads", e.user, map[string]any{"name": "x", "label": "X", "type": "text"}),
		problemJSON(403, "forbidden", "this action requires the admin role"))

	for _, tc := range []struct {
		name       string
		body       map[string]any
		field, msg string
	}{
		{"built-in name", map[string]any{"name": "email", "label": "E", "type": "text"}, "name", "is a built-in field of leads"},
		{"upper-case", map[string]any{"name": "Erp", "label": "E", "type": "text"}, "name", "must start with a lower-case letter and hold only lower-case letters, digits and _ (at most 63)"},
		{"duplicate", map[string]any{"name": "erp_id", "label": "E", "type": "text"}, "name", "is already used by another custom field of leads"},
		{"enum without options", map[string]any{"name": "tier", "label": "Tier", "type": "enum"}, "options", "an enum field needs at least one option"},
		{"unique boolean", map[string]any{"name": "vip", "label": "VIP", "type": "boolean", "unique": true}, "unique", "applies only to text, email, phone and number fields"},
		{"reserved", map[string]any{"name": "custom_fields", "label": "C", "type": "text"}, "name", "is reserved"},
		{"too long", map[string]any{"name": "a" + strings.Repeat("b", 63), "label": "L", "type": "text"}, "name", "must start with a lower-case letter and hold only lower-case letters, digits and _ (at most 63)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantExactProblem(t, e.do("POST", "/properties/leads", e.admin, tc.body),
				problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{tc.field, tc.msg}))
		})
	}

	// A type change while a lead holds a value is refused.
	e.createLead(map[string]any{"first_name": "A", "last_name": "B", "custom_fields": map[string]any{"erp_id": "E-1"}})
	r = e.do("PUT", "/properties/leads/erp_id", e.admin, map[string]any{"type": "number"})
	wantExactProblem(t, r, problemJSON(409, "property_has_values",
		"the type of erp_id cannot change while records hold values; delete and recreate the field, or clear the values first"))

	// The internal read other contexts (and the gateway) use.
	req, _ := http.NewRequest("GET", propertyapi.PathInternal+"leads", nil)
	req.Header.Set("X-Internal-Token", secret)
	r = e.serve(req)
	var defs propertyapi.Definitions
	if r.status != http.StatusOK || json.Unmarshal(r.body, &defs) != nil || len(defs.Data) != 1 || defs.Data[0].Name != "erp_id" {
		t.Fatalf("internal read: %d %s", r.status, r.body)
	}

	if r := e.do("DELETE", "/properties/leads/erp_id", e.admin, nil); r.status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	wantProblem(t, e.do("GET", "/properties/leads/erp_id", e.admin, nil), http.StatusNotFound, "not_found")
}

func TestLeadCustomFieldWrites(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.defineAll()

	// A lead without values reads every defined name as null.
	id := e.createLead(map[string]any{"first_name": "Ada", "last_name": "Lovelace"})
	r := e.do("GET", path("/leads/{id}", id), e.user, nil)
	want := map[string]any{"erp_id": nil, "budget": nil, "tier": nil, "topics": nil, "vip": nil, "met_on": nil, "owner": nil}
	if diff := cmp.Diff(want, data(t, r)["custom_fields"]); diff != "" {
		t.Fatalf("empty custom_fields (-want +got):\n%s", diff)
	}

	// A partial write sets some; an absent name keeps its value, null clears.
	r = e.do("PUT", path("/leads/{id}", id), e.user, map[string]any{"first_name": "Ada", "last_name": "Lovelace",
		"custom_fields": map[string]any{"erp_id": "E-1", "budget": "1500.50", "tier": "gold", "topics": []string{"crm", "bi"},
			"vip": true, "met_on": "2026-01-31", "owner": 3}})
	if r.status != http.StatusOK {
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	want = map[string]any{"erp_id": "E-1", "budget": "1500.5", "tier": "gold", "topics": []any{"crm", "bi"}, "vip": true,
		"met_on": "2026-01-31", "owner": 3.0}
	if diff := cmp.Diff(want, data(t, r)["custom_fields"]); diff != "" {
		t.Fatalf("custom_fields (-want +got):\n%s", diff)
	}
	r = e.do("PUT", path("/leads/{id}", id), e.user, map[string]any{"first_name": "Ada", "last_name": "Lovelace",
		"custom_fields": map[string]any{"vip": nil, "tier": ""}})
	want["vip"], want["tier"] = nil, nil
	if diff := cmp.Diff(want, data(t, r)["custom_fields"]); diff != "" {
		t.Fatalf("after clearing (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		name  string
		value map[string]any
		field string
		msg   string
	}{
		{"unknown name", map[string]any{"nope": "x"}, "custom_fields.nope", "is not a custom field of this record type"},
		{"wrong type", map[string]any{"budget": "lots"}, "custom_fields.budget", "must be a decimal number such as 1250.5"},
		{"not an option", map[string]any{"tier": "bronze"}, "custom_fields.tier", "must be one of gold, silver"},
		{"unknown user", map[string]any{"owner": 999}, "custom_fields.owner", "must be the id of an existing user"},
		{"too many places", map[string]any{"budget": "1.1234567"}, "custom_fields.budget", "must have at most 6 decimal places"},
		{"impossible date", map[string]any{"met_on": "2026-02-30"}, "custom_fields.met_on", "must be a date in the form YYYY-MM-DD"},
		{"archived option", map[string]any{"tier": "bronze_old"}, "custom_fields.tier", `option "bronze_old" is archived`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantExactProblem(t, e.do("POST", "/leads", e.user, map[string]any{"first_name": "B", "last_name": "C", "custom_fields": tc.value}),
				problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{tc.field, tc.msg}))
		})
	}
	// Built-in and custom problems are one answer.
	wantProblem(t, e.do("POST", "/leads", e.user, map[string]any{"first_name": "", "last_name": "C", "custom_fields": map[string]any{"vip": "yes"}}),
		http.StatusUnprocessableEntity, "validation_failed", "first_name", "custom_fields.vip")

	// A second lead with the same unique value is a conflict naming the holder.
	r = e.do("POST", "/leads", e.user, map[string]any{"first_name": "B", "last_name": "C", "custom_fields": map[string]any{"erp_id": "E-1"}})
	b := wantProblem(t, r, http.StatusConflict, "duplicate_value")
	if b["existing_id"] != float64(id) || !strings.Contains(string(r.body), "custom_fields.erp_id") {
		t.Fatalf("duplicate: %s", r.body)
	}
	if n := e.countRows(`SELECT count(*) FROM leads`); n != 1 {
		t.Fatalf("leads = %d after refusals, want 1", n)
	}

	// Deleting the lead frees its unique value; the event carries the record's custom fields.
	var payload []byte
	if err := e.store.DB().QueryRow(context.Background(), `SELECT payload FROM outbox WHERE stream = $1 AND type = 'lead.updated'
		ORDER BY id LIMIT 1`, outbox.Stream("leads")).Scan(&payload); err != nil || !strings.Contains(string(payload), `"erp_id":"E-1"`) {
		t.Fatalf("lead.updated payload: %s %v", payload, err)
	}
	if r := e.do("DELETE", path("/leads/{id}", id), e.user, nil); r.status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	e.createLead(map[string]any{"first_name": "B", "last_name": "C", "custom_fields": map[string]any{"erp_id": "E-1"}})
}

func TestLeadCustomFieldLists(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.defineAll()
	for i, l := range []struct {
		status string
		cf     map[string]any
	}{
		{"new", map[string]any{"budget": "100", "tier": "gold", "topics": []string{"crm", "bi"}, "vip": true}},
		{"new", map[string]any{"budget": "900", "tier": "silver", "topics": []string{"crm"}}},
		{"contacted", map[string]any{"budget": "500", "tier": "gold", "topics": []string{"crm", "bi", "erp"}}},
		{"new", map[string]any{}},
	} {
		e.createLead(map[string]any{"first_name": fmt.Sprintf("L%d", i), "last_name": "X", "status": l.status, "custom_fields": l.cf})
	}
	names := func(q string) ([]string, float64) {
		t.Helper()
		r := e.do("GET", "/leads?"+q, e.user, nil)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", q, r.status, r.body)
		}
		var out []string
		for _, it := range r.json(t)["data"].([]any) {
			out = append(out, it.(map[string]any)["first_name"].(string))
		}
		return out, r.json(t)["total"].(float64)
	}
	for _, tc := range []struct {
		q     string
		want  []string
		total float64
	}{
		{"status=new&cf[tier]=gold", []string{"L0"}, 1},
		{"cf[tier]=gold,silver&sort_by=cf.budget&sort_dir=desc", []string{"L1", "L2", "L0"}, 3},
		{"cf[topics]=crm,bi&sort_by=cf.budget", []string{"L0", "L2"}, 2},
		{"cf[budget][gte]=200&cf[budget][lte]=900&sort_by=cf.budget", []string{"L2", "L1"}, 2},
		{"status=new&cf[budget][empty]=true", []string{"L3"}, 1},
		{"cf[vip]=true", []string{"L0"}, 1},
		{"status=new&per_page=1&sort_by=cf.budget", []string{"L0"}, 3},
		{"search=x&cf[tier]=gold&sort_by=cf.budget&sort_dir=desc", []string{"L2", "L0"}, 2},
	} {
		got, total := names(tc.q)
		if diff := cmp.Diff(tc.want, got); diff != "" || total != tc.total {
			t.Errorf("%s: total %v want %v (-want +got):\n%s", tc.q, total, tc.total, diff)
		}
	}
	wantProblem(t, e.do("GET", "/leads?cf[nope]=1", e.user, nil), http.StatusUnprocessableEntity, "validation_failed", "cf[nope]")
	wantExactProblem(t, e.do("GET", "/leads?cf[tier][gte]=gold", e.user, nil), problemJSON(422, "validation_failed", "one or more fields are invalid",
		[2]string{"cf[tier][gte]", "a range applies only to number, date and datetime fields"}))
	wantProblem(t, e.do("GET", "/leads?sort_by=cf.nope", e.user, nil), http.StatusUnprocessableEntity, "validation_failed", "sort_by")
}

// batch posts a batch body and returns the answer.
func (e *env) batch(op string, body any, key string) resp {
	e.t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", "/leads/batch/"+op, strings.NewReader(string(raw)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.user)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	return e.serve(req)
}

// statuses lists each result's status and the record's first_name.
func statuses(t testing.TB, r resp) []string {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("batch: %d %s", r.status, r.body)
	}
	var out []string
	for _, it := range r.json(t)["data"].([]any) {
		m := it.(map[string]any)
		s := m["status"].(string)
		if rec, ok := m["record"].(map[string]any); ok {
			s += ":" + rec["first_name"].(string)
		}
		out = append(out, s)
	}
	return out
}

func TestLeadBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.defineAll()
	events := func() int { return e.countRows(`SELECT count(*) FROM outbox WHERE type LIKE 'lead.%'`) }

	in := func(name, erp string) map[string]any {
		return map[string]any{"first_name": name, "last_name": "X", "custom_fields": map[string]any{"erp_id": erp}}
	}
	r := e.batch("create", map[string]any{"inputs": []any{in("A", "E-1"), in("B", "E-2")}}, "k1")
	if diff := cmp.Diff([]string{"created:A", "created:B"}, statuses(t, r)); diff != "" {
		t.Fatalf("create (-want +got):\n%s", diff)
	}
	if m := r.json(t)["message"]; m != "leads created" {
		t.Errorf("message = %v", m)
	}
	if n := events(); n != 2 {
		t.Fatalf("events after create = %d, want 2", n)
	}
	// The same key and body replays; nothing more is written.
	again := e.batch("create", map[string]any{"inputs": []any{in("A", "E-1"), in("B", "E-2")}}, "k1")
	if again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(r.body) || events() != 2 {
		t.Fatalf("replay: %q %s", again.header.Get("Idempotent-Replayed"), again.body)
	}
	wantProblem(t, e.batch("create", map[string]any{"inputs": []any{in("C", "E-3")}}, "k1"), http.StatusConflict, "idempotency_key_reused")
	ids := []int64{}
	for _, it := range r.json(t)["data"].([]any) {
		ids = append(ids, int64(it.(map[string]any)["record"].(map[string]any)["id"].(float64)))
	}

	// Update: a changed lead is updated, one given as it is unchanged.
	r = e.batch("update", map[string]any{"inputs": []any{
		map[string]any{"id": ids[0], "first_name": "A2", "last_name": "X"},
		map[string]any{"id": ids[1], "first_name": "B", "last_name": "X"},
	}}, "")
	if diff := cmp.Diff([]string{"updated:A2", "unchanged:B"}, statuses(t, r)); diff != "" {
		t.Fatalf("update (-want +got):\n%s", diff)
	}
	if n := events(); n != 3 {
		t.Fatalf("events after update = %d, want 3", n)
	}

	// Upsert by the unique custom field: E-2 exists, E-9 does not.
	r = e.batch("upsert", map[string]any{"id_property": "erp_id", "inputs": []any{in("B2", "E-2"), in("N", "E-9")}}, "")
	if diff := cmp.Diff([]string{"updated:B2", "created:N"}, statuses(t, r)); diff != "" {
		t.Fatalf("upsert (-want +got):\n%s", diff)
	}
	wantExactProblem(t, e.batch("upsert", map[string]any{"id_property": "erp_id", "inputs": []any{in("P", "E-5"), in("Q", "E-5")}}, ""),
		problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"inputs[1].custom_fields.erp_id", "repeats inputs[0]"}))
	wantExactProblem(t, e.batch("upsert", map[string]any{"id_property": "erp_id", "inputs": []any{
		map[string]any{"first_name": "P", "last_name": "X"},
		map[string]any{"first_name": "Q", "last_name": "X", "custom_fields": map[string]any{"erp_id": 5}},
	}}, ""), problemJSON(422, "validation_failed", "one or more fields are invalid",
		[2]string{"inputs[0].custom_fields.erp_id", "is required: it identifies the lead"},
		[2]string{"inputs[1].custom_fields.erp_id", "must be a string"}))
	wantExactProblem(t, e.batch("upsert", map[string]any{"id_property": "budget", "inputs": []any{in("P", "E-5")}}, ""),
		problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"id_property", "must name a unique custom field of leads"}))

	// Read by ids and by external id.
	r = e.batch("read", map[string]any{"ids": []int64{ids[0], 999999}}, "")
	if diff := cmp.Diff([]string{"unchanged:A2", "not_found"}, statuses(t, r)); diff != "" {
		t.Fatalf("read (-want +got):\n%s", diff)
	}
	r = e.batch("read", map[string]any{"id_property": "erp_id", "values": []string{"E-9", "E-404"}}, "")
	if diff := cmp.Diff([]string{"unchanged:N", "not_found"}, statuses(t, r)); diff != "" {
		t.Fatalf("read by erp_id (-want +got):\n%s", diff)
	}

	// Read one by external id.
	if r := e.do("GET", "/leads/E-9?id_property=erp_id", e.user, nil); r.status != http.StatusOK || data(t, r)["first_name"] != "N" {
		t.Fatalf("get by erp_id: %d %s", r.status, r.body)
	}
	wantProblem(t, e.do("GET", "/leads/E-404?id_property=erp_id", e.user, nil), http.StatusNotFound, "not_found")
	wantProblem(t, e.do("GET", "/leads/E-9?id_property=tier", e.user, nil), http.StatusUnprocessableEntity, "validation_failed", "id_property")

	// Sizes, and one bad input among 100: nothing written.
	before, beforeEvents := e.countRows(`SELECT count(*) FROM leads`), events()
	wantExactProblem(t, e.batch("create", map[string]any{"inputs": []any{}}, ""),
		problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"inputs", "must hold at least one item"}))
	many := make([]any, 101)
	for i := range many {
		many[i] = map[string]any{"first_name": fmt.Sprint("M", i), "last_name": "X"}
	}
	wantExactProblem(t, e.batch("create", map[string]any{"inputs": many}, ""),
		problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"inputs", "must hold at most 100 items"}))
	many = many[:100]
	many[37] = map[string]any{"first_name": "M37", "last_name": "X", "custom_fields": map[string]any{"tier": "bronze"}}
	wantExactProblem(t, e.batch("create", map[string]any{"inputs": many}, ""),
		problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"inputs[37].custom_fields.tier", "must be one of gold, silver"}))
	many[37] = map[string]any{"first_name": "M37", "last_name": "X", "custom_fields": map[string]any{"erp_id": "E-1"}}
	wantProblem(t, e.batch("create", map[string]any{"inputs": many}, ""), http.StatusConflict, "duplicate_value")
	if n, ev := e.countRows(`SELECT count(*) FROM leads`), events(); n != before || ev != beforeEvents {
		t.Fatalf("a refused batch wrote: leads %d→%d, events %d→%d", before, n, beforeEvents, ev)
	}
	wantExactProblem(t, e.batch("update", map[string]any{"inputs": []any{map[string]any{"id": 999999, "first_name": "Z", "last_name": "X"}}}, ""),
		problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"inputs[0].id", "is not an existing lead"}))

	// Delete: one per event, an unknown id is not_found.
	r = e.batch("delete", map[string]any{"ids": []int64{ids[0], 999999}}, "")
	if diff := cmp.Diff([]string{"deleted", "not_found"}, statuses(t, r)); diff != "" {
		t.Fatalf("delete (-want +got):\n%s", diff)
	}
	if n := e.countRows(`SELECT count(*) FROM outbox WHERE type = 'lead.deleted'`); n != 1 {
		t.Fatalf("lead.deleted events = %d, want 1", n)
	}
	// Its unique value is free again.
	r = e.batch("create", map[string]any{"inputs": []any{in("A3", "E-1")}}, "")
	if diff := cmp.Diff([]string{"created:A3"}, statuses(t, r)); diff != "" {
		t.Fatalf("create after delete (-want +got):\n%s", diff)
	}
}

// TestQualifyCarriesCustomFields: the contact and the deal a lead becomes
// get the lead's values of fields they define with the same name and type,
// and no others.
func TestQualifyCarriesCustomFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.defineAll()
	e.contacts.Define(propertyapi.Contacts,
		propertyapi.PropertyInput{Name: "erp_id", Label: "ERP id", Type: "text"},
		propertyapi.PropertyInput{Name: "budget", Label: "Budget", Type: "text"}, // another type: not carried
		propertyapi.PropertyInput{Name: "tier", Label: "Tier", Type: "enum", Options: []propertyapi.Option{{Value: "gold"}}},
		propertyapi.PropertyInput{Name: "topics", Label: "Topics", Type: "multi_enum", Options: []propertyapi.Option{{Value: "crm"}}}, // lacks bi
	)
	e.deals.fake.Define(
		propertyapi.PropertyInput{Name: "budget", Label: "Budget", Type: "number"},
		propertyapi.PropertyInput{Name: "owner", Label: "Owner", Type: "user"},
		propertyapi.PropertyInput{Name: "vip", Label: "VIP", Type: "boolean"}, // the lead holds none
	)
	id := e.createLead(map[string]any{"first_name": "Q", "last_name": "L", "company": "Acme",
		"custom_fields": map[string]any{"erp_id": "E-7", "budget": "42.5", "tier": "gold", "topics": []string{"crm", "bi"}, "owner": 3}})
	r := e.do("POST", path("/leads/{id}/qualify", id), e.user, map[string]any{"create_deal": true})
	if r.status != http.StatusOK {
		t.Fatalf("qualify: %d %s", r.status, r.body)
	}
	q := r.json(t)
	contact := e.contacts.Contact(int64(q["contact_id"].(float64)))
	// contacts shows every field it defines, null where the lead gave none.
	if diff := cmp.Diff(map[string]any{"erp_id": "E-7", "tier": "gold", "budget": nil, "topics": nil}, contact["custom_fields"]); diff != "" {
		t.Errorf("contact custom_fields (-want +got):\n%s", diff)
	}
	deal := e.deals.fake.Deal(int64(q["deal_id"].(float64)))
	if got, _ := json.Marshal(deal["custom_fields"]); string(got) != `{"budget":"42.5","owner":3,"vip":null}` {
		t.Errorf("deal custom_fields = %s", got)
	}
}

// TestQualifyRetryCarriesSameValues: a deal step whose answer was lost is
// resent with the body first built, whatever the definitions became since.
func TestQualifyRetryCarriesSameValues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.defineAll()
	e.deals.fake.Define(propertyapi.PropertyInput{Name: "budget", Label: "Budget", Type: "number"})
	id := e.createLead(map[string]any{"first_name": "R", "last_name": "L", "custom_fields": map[string]any{"budget": "7", "vip": true}})
	e.deals.loseNextAnswer()
	r := e.do("POST", path("/leads/{id}/qualify", id), e.user, map[string]any{"create_deal": true})
	wantProblem(t, r, http.StatusGatewayTimeout, "upstream_timeout")
	// deals defines vip meanwhile: the resent body still carries only budget.
	e.deals.fake.Define(propertyapi.PropertyInput{Name: "vip", Label: "VIP", Type: "boolean"})
	r = e.do("POST", path("/leads/{id}/qualify", id), e.user, map[string]any{"create_deal": true})
	if r.status != http.StatusOK {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
	sent := e.deals.bodies()
	if len(sent) != 2 {
		t.Fatalf("deal bodies: %q", sent)
	}
	var first, second map[string]any
	if json.Unmarshal([]byte(sent[0]), &first) != nil || json.Unmarshal([]byte(sent[1]), &second) != nil {
		t.Fatalf("deal bodies: %q", sent)
	}
	if diff := cmp.Diff(first, second); diff != "" || !strings.Contains(sent[0], `"custom_fields":{"budget":"7"}`) {
		t.Fatalf("resent body differs (-first +second):\n%s%q", diff, sent)
	}
	deal := e.deals.fake.Deal(int64(r.json(t)["deal_id"].(float64)))
	if got, _ := json.Marshal(deal["custom_fields"]); string(got) != `{"budget":"7"}` {
		t.Errorf("deal custom_fields = %s", got)
	}
}

// TestRequiredCustomField: a required field binds the public writes; the
// internal creates, which forward intake's public submissions, take leads
// without it.
func TestRequiredCustomField(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.define(map[string]any{"name": "region", "label": "Region", "type": "text", "required": true})
	wantExactProblem(t, e.do("POST", "/leads", e.user, map[string]any{"first_name": "A", "last_name": "B"}),
		problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"custom_fields.region", "is required"}))
	id := e.createLead(map[string]any{"first_name": "A", "last_name": "B", "custom_fields": map[string]any{"region": "EMEA"}})
	wantExactProblem(t, e.do("PUT", path("/leads/{id}", id), e.user, map[string]any{"first_name": "A", "last_name": "B", "custom_fields": map[string]any{"region": nil}}),
		problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"custom_fields.region", "is required"}))

	if r := e.postSingle("form-1", map[string]any{"first_name": "F", "last_name": "G"}); r.status != http.StatusCreated {
		t.Fatalf("internal create: %d %s", r.status, r.body)
	}
	items := batchItems(t, e.postBatch(map[string]any{"items": []map[string]any{{"key": "form-2", "lead": map[string]any{"first_name": "H", "last_name": "I"}}}}, false))
	if len(items) != 1 || items[0].Status != http.StatusCreated {
		t.Fatalf("internal batch: %+v", items)
	}
}

// TestAtMost250Properties: the 251st definition of an object is refused.
func TestAtMost250Properties(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 250 {
		e.define(map[string]any{"name": fmt.Sprintf("f%d", i), "label": "F", "type": "text"})
	}
	wantExactProblem(t, e.do("POST", "/properties/leads", e.admin, map[string]any{"name": "one_more", "label": "F", "type": "text"}),
		problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"name", "leads already has 250 custom fields, the most allowed"}))
}

// TestLeadBatchEditScope: a batch update or delete naming a lead outside
// the caller's edit scope is a 422 naming it (inputs[i].id, ids[i]), the
// batch being validated whole, and nothing is written; the single write
// is a 403.
func TestLeadBatchEditScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.store.DB().Exec(context.Background(), `UPDATE directory_users SET edit_scope = 'own' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	e.define(map[string]any{"name": "erp_id", "label": "ERP id", "type": "text", "unique": true})
	r := e.do("POST", "/leads", e.admin, map[string]any{"first_name": "O", "last_name": "X", "assigned_to": 4,
		"custom_fields": map[string]any{"erp_id": "E-O"}})
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	other := int64(data(t, r)["id"].(float64))
	mine := e.createLead(map[string]any{"first_name": "M", "last_name": "X"})
	wantProblem(t, e.do("PUT", path("/leads/{id}", other), e.user, map[string]any{"first_name": "O2", "last_name": "X"}), http.StatusForbidden, "forbidden")
	wantExactProblem(t, e.batch("update", map[string]any{"inputs": []any{
		map[string]any{"id": mine, "first_name": "M2", "last_name": "X"},
		map[string]any{"id": other, "first_name": "O2", "last_name": "X"},
	}}, ""), problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"inputs[1].id", "is a lead you may not change"}))
	wantExactProblem(t, e.batch("delete", map[string]any{"ids": []int64{mine, other}}, ""),
		problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"ids[1]", "is a lead you may not change"}))
	wantExactProblem(t, e.batch("upsert", map[string]any{"id_property": "erp_id", "inputs": []any{
		map[string]any{"first_name": "N", "last_name": "X", "custom_fields": map[string]any{"erp_id": "E-N"}},
		map[string]any{"first_name": "O2", "last_name": "X", "custom_fields": map[string]any{"erp_id": "E-O"}},
	}}, ""), problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"inputs[1].custom_fields.erp_id", "is held by a lead you may not change"}))
	wantExactProblem(t, e.batch("delete", map[string]any{"ids": []int64{mine, mine}}, ""),
		problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"inputs[1].id", "repeats inputs[0]"}))
	if n := e.countRows(`SELECT count(*) FROM leads WHERE first_name IN ('M', 'O')`); n != 2 || e.countRows(`SELECT count(*) FROM leads WHERE first_name = 'N'`) != 0 {
		t.Fatalf("leads left as they were = %d, want 2", n)
	}
}
