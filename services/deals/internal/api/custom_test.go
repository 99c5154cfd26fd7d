package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// cfDeal is the test's view of a deal's custom fields.
type cfDeal struct {
	ID           int64          `json:"id"`
	Title        string         `json:"title"`
	Value        string         `json:"value"`
	CustomFields map[string]any `json:"custom_fields"`
}

// define creates the custom fields of deals the tests use, as an admin:
// erp_id (unique text), tier (enum), seats (number), owner (user),
// signed (date).
func (e *env) define() {
	e.t.Helper()
	for _, body := range []map[string]any{
		{"name": "erp_id", "label": "ERP id", "type": "text", "unique": true},
		{"name": "tier", "label": "Tier", "type": "enum", "options": []map[string]any{{"value": "gold", "label": "Gold"}, {"value": "silver", "label": "Silver"}}},
		{"name": "seats", "label": "Seats", "type": "number"},
		{"name": "owner", "label": "Owner", "type": "user"},
		{"name": "signed", "label": "Signed", "type": "date"},
	} {
		if r := e.do("POST", "/properties/deals", e.admin, body); r.Status != http.StatusCreated {
			e.t.Fatalf("define %v: %d %s", body["name"], r.Status, r.Body)
		}
	}
}

// events is the types and custom fields of the deal events published, in
// order.
func (e *env) events() []string {
	e.t.Helper()
	rows, err := e.db.Query(context.Background(), `SELECT type, coalesce(payload->'custom_fields'->>'erp_id', '-')
		FROM outbox WHERE stream = 'crm:events:deals' AND type LIKE 'deal.%' ORDER BY id`)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var typ, erp string
		if err := rows.Scan(&typ, &erp); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, typ+" "+erp)
	}
	return out
}

func TestDealProperties(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := map[string]any{"name": "erp_id", "label": "ERP id", "type": "text", "unique": true}
	r := e.do("POST", "/properties/deals", e.admin, body)
	var def map[string]any
	e.data(r, http.StatusCreated, &def)
	if loc := r.Header.Get("Location"); loc != "/api/properties/deals/erp_id" {
		t.Errorf("Location %q", loc)
	}
	if def["object"] != "deals" || def["name"] != "erp_id" || def["unique"] != true {
		t.Errorf("created %v", def)
	}
	var list []map[string]any
	e.data(e.do("GET", "/properties/deals", e.admin, nil), http.StatusOK, &list)
	if len(list) != 1 || list[0]["name"] != "erp_id" {
		t.Errorf("list %v", list)
	}
	e.data(e.do("GET", "/properties/deals/erp_id", e.admin, nil), http.StatusOK, &def)
	e.data(e.do("PUT", "/properties/deals/erp_id", e.admin, map[string]any{"label": "ERP number"}), http.StatusOK, &def)
	if def["label"] != "ERP number" {
		t.Errorf("updated %v", def)
	}
	// The internal read serves the gateway and leads.
	var internal struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.Unmarshal(e.internal("GET", "/internal/properties/deals", nil).Body, &internal); err != nil || len(internal.Data) != 1 {
		t.Errorf("internal read %v %v", internal, err)
	}

	wantProblem(t, e.do("GET", "/properties/deals", e.user, nil), http.StatusForbidden, "forbidden")
	wantProblem(t, e.do("POST", "/properties/deals", e.user, body), http.StatusForbidden, "forbidden")
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"built-in name", map[string]any{"name": "title", "label": "T", "type": "text"}, "name"},
		{"upper case", map[string]any{"name": "ErpId", "label": "E", "type": "text"}, "name"},
		{"duplicate", map[string]any{"name": "erp_id", "label": "E", "type": "text"}, "name"},
		{"enum without options", map[string]any{"name": "tier", "label": "Tier", "type": "enum"}, "options"},
		{"unique boolean", map[string]any{"name": "vip", "label": "VIP", "type": "boolean", "unique": true}, "unique"},
	} {
		wantProblem(t, e.do("POST", "/properties/deals", e.admin, tc.body), http.StatusUnprocessableEntity, "validation_failed", tc.field)
	}
	// A type change while a deal holds a value is a conflict.
	e.data(e.do("POST", "/deals", e.user, map[string]any{"title": "Held", "custom_fields": map[string]any{"erp_id": "E-1"}}), http.StatusCreated, nil)
	wantProblem(t, e.do("PUT", "/properties/deals/erp_id", e.admin, map[string]any{"type": "number"}), http.StatusConflict, "property_has_values")

	r = e.do("DELETE", "/properties/deals/erp_id", e.admin, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	wantProblem(t, e.do("GET", "/properties/deals/erp_id", e.admin, nil), http.StatusNotFound, "not_found")
}

func TestDealCustomFieldWrites(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.define()
	var d cfDeal
	e.data(e.do("POST", "/deals", e.user, map[string]any{"title": "Acme", "custom_fields": map[string]any{
		"erp_id": "E-1", "tier": "gold", "seats": 12.50, "owner": otherID}}), http.StatusCreated, &d)
	want := map[string]any{"erp_id": "E-1", "tier": "gold", "seats": "12.5", "owner": float64(otherID), "signed": nil}
	if diff := cmp.Diff(want, d.CustomFields); diff != "" {
		t.Errorf("created (-want +got):\n%s", diff)
	}
	// A partial write keeps what it leaves out; null clears.
	e.data(e.do("PUT", path("/deals/%d", d.ID), e.user, map[string]any{"title": "Acme", "custom_fields": map[string]any{
		"tier": nil, "signed": "2026-12-31"}}), http.StatusOK, &d)
	want = map[string]any{"erp_id": "E-1", "tier": nil, "seats": "12.5", "owner": float64(otherID), "signed": "2026-12-31"}
	if diff := cmp.Diff(want, d.CustomFields); diff != "" {
		t.Errorf("updated (-want +got):\n%s", diff)
	}
	e.data(e.do("GET", path("/deals/%d", d.ID), e.user, nil), http.StatusOK, &d)
	if diff := cmp.Diff(want, d.CustomFields); diff != "" {
		t.Errorf("read (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		name   string
		custom map[string]any
		field  string
	}{
		{"unknown name", map[string]any{"nope": 1}, "custom_fields.nope"},
		{"wrong type", map[string]any{"seats": "many"}, "custom_fields.seats"},
		{"not an option", map[string]any{"tier": "bronze"}, "custom_fields.tier"},
		{"no such user", map[string]any{"owner": 999}, "custom_fields.owner"},
		{"bad date", map[string]any{"signed": "31/12/2026"}, "custom_fields.signed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", "/deals", e.user, map[string]any{"title": "x", "custom_fields": tc.custom})
			wantProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", tc.field)
			r = e.do("PUT", path("/deals/%d", d.ID), e.user, map[string]any{"title": "x", "custom_fields": tc.custom})
			wantProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", tc.field)
		})
	}
	// Built-in and custom problems come together.
	wantProblem(t, e.do("POST", "/deals", e.user, map[string]any{"title": "", "custom_fields": map[string]any{"tier": "bronze"}}),
		http.StatusUnprocessableEntity, "validation_failed", "title", "custom_fields.tier")

	// A second deal with the same unique value: 409 naming the field and the holder.
	r := e.do("POST", "/deals", e.user, map[string]any{"title": "Twin", "custom_fields": map[string]any{"erp_id": "E-1"}})
	b := wantProblemBody(t, r, http.StatusConflict, "duplicate_value", "custom_fields.erp_id")
	if b["existing_id"] != float64(d.ID) {
		t.Errorf("existing_id %v, want %d", b["existing_id"], d.ID)
	}
	// The internal create (lead qualification) applies the same check.
	r = e.internal("POST", "/internal/deals", map[string]any{"title": "Q", "custom_fields": map[string]any{"tier": "bronze"}},
		"Idempotency-Key", "q-1")
	wantProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "custom_fields.tier")
	var q cfDeal
	e.data(e.internal("POST", "/internal/deals", map[string]any{"title": "Q", "custom_fields": map[string]any{"tier": "silver"}},
		"Idempotency-Key", "q-1"), http.StatusCreated, &q)
	if q.CustomFields["tier"] != "silver" {
		t.Errorf("internal create %v", q.CustomFields)
	}

	// Deleting the deal releases its unique value.
	if r := e.do("DELETE", path("/deals/%d", d.ID), e.user, nil); r.Status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	e.data(e.do("POST", "/deals", e.user, map[string]any{"title": "Twin", "custom_fields": map[string]any{"erp_id": "E-1"}}), http.StatusCreated, nil)
	wantEvents := []string{"deal.created E-1", "deal.updated E-1", "deal.created -", "deal.deleted -", "deal.created E-1"}
	if diff := cmp.Diff(wantEvents, e.events()); diff != "" {
		t.Errorf("events carry custom_fields (-want +got):\n%s", diff)
	}
}

// wantProblemBody is wantProblem returning the body's members.
func wantProblemBody(t *testing.T, r resp, status int, code string, fields ...string) map[string]any {
	t.Helper()
	wantProblem(t, r, status, code, fields...)
	var b map[string]any
	if err := json.Unmarshal(r.Body, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDealCustomFieldList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.define()
	st := e.stages()
	for i, c := range []struct {
		tier  any
		seats any
		stage string
	}{{"gold", 5, "Prospecting"}, {"silver", 20, "Prospecting"}, {"gold", 50, "Proposal"}, {nil, 10, "Prospecting"}, {"gold", nil, "Prospecting"}} {
		e.data(e.do("POST", "/deals", e.user, map[string]any{"title": fmt.Sprintf("D%d", i), "stage_id": st[c.stage].ID,
			"custom_fields": map[string]any{"tier": c.tier, "seats": c.seats}}), http.StatusCreated, nil)
	}
	prospecting := fmt.Sprintf("&stage_id=%d", st["Prospecting"].ID)
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"?cf[tier]=gold" + prospecting + "&sort_by=title", []string{"D0", "D4"}},
		{"?cf[tier]=gold,silver&sort_by=title", []string{"D0", "D1", "D2", "D4"}},
		{"?cf[seats][gte]=10&cf[seats][lte]=20&sort_by=title", []string{"D1", "D3"}},
		{"?cf[tier][empty]=true&sort_by=title", []string{"D3"}},
		{"?cf[seats][empty]=false" + prospecting + "&sort_by=cf.seats&sort_dir=desc", []string{"D1", "D3", "D0"}},
		{"?sort_by=cf.seats&per_page=2", []string{"D0", "D3"}},
	} {
		p := e.list(tc.query, e.user)
		if diff := cmp.Diff(tc.want, titles(p)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.query, diff)
		}
		if tc.query == "?sort_by=cf.seats&per_page=2" && p.Total != 5 {
			t.Errorf("%s: total %d, want 5", tc.query, p.Total)
		} else if tc.query != "?sort_by=cf.seats&per_page=2" && p.Total != len(tc.want) {
			t.Errorf("%s: total %d, want %d", tc.query, p.Total, len(tc.want))
		}
	}
	wantProblem(t, e.do("GET", "/deals?cf[nope]=1", e.user, nil), http.StatusUnprocessableEntity, "validation_failed", "cf[nope]")
	wantProblem(t, e.do("GET", "/deals?cf[tier][gte]=gold", e.user, nil), http.StatusUnprocessableEntity, "validation_failed", "cf[tier][gte]")
	wantProblem(t, e.do("GET", "/deals?sort_by=cf.nope", e.user, nil), http.StatusUnprocessableEntity, "validation_failed", "sort_by")
}

// batchResult is one result of a batch answer.
type batchResult struct {
	Status string  `json:"status"`
	Record *cfDeal `json:"record"`
}

// batch posts a batch as the user and decodes its results.
func (e *env) batch(op string, body any, headers ...string) (resp, []batchResult) {
	e.t.Helper()
	r := e.do("POST", "/deals/batch/"+op, e.user, body, headers...)
	var out struct {
		Success bool          `json:"success"`
		Data    []batchResult `json:"data"`
	}
	if r.Status == http.StatusOK {
		if err := json.Unmarshal(r.Body, &out); err != nil || !out.Success {
			e.t.Fatalf("batch %s: %s (%v)", op, r.Body, err)
		}
	}
	return r, out.Data
}

// statuses is each result's status and its record's erp_id.
func statuses(rs []batchResult) []string {
	out := []string{}
	for _, r := range rs {
		erp := "-"
		if r.Record != nil && r.Record.CustomFields["erp_id"] != nil {
			erp = fmt.Sprint(r.Record.CustomFields["erp_id"])
		}
		out = append(out, r.Status+" "+erp)
	}
	return out
}

func (e *env) count() int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM deals`).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func TestDealBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.define()
	in := func(title, erp string) map[string]any {
		return map[string]any{"title": title, "custom_fields": map[string]any{"erp_id": erp}}
	}

	r, res := e.batch("create", map[string]any{"inputs": []any{in("A", "E-1"), in("B", "E-2")}}, "Idempotency-Key", "c-1")
	if r.Status != http.StatusOK {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if diff := cmp.Diff([]string{"created E-1", "created E-2"}, statuses(res)); diff != "" {
		t.Errorf("create (-want +got):\n%s", diff)
	}
	a, b := res[0].Record.ID, res[1].Record.ID
	// The same key and body answer the same deals, writing nothing.
	r, again := e.batch("create", map[string]any{"inputs": []any{in("A", "E-1"), in("B", "E-2")}}, "Idempotency-Key", "c-1")
	if r.Header.Get("Idempotent-Replayed") != "true" || again[0].Record.ID != a || e.count() != 2 {
		t.Errorf("replay: %v %v, %d deals", r.Header, again, e.count())
	}
	wantProblem(t, e.do("POST", "/deals/batch/create", e.user, map[string]any{"inputs": []any{in("C", "E-3")}}, "Idempotency-Key", "c-1"),
		http.StatusConflict, "idempotency_key_reused")

	// Update: changed, unchanged.
	r, res = e.batch("update", map[string]any{"inputs": []any{
		map[string]any{"id": a, "title": "A2"}, map[string]any{"id": b, "title": "B"}}})
	if r.Status != http.StatusOK {
		t.Fatalf("update: %d %s", r.Status, r.Body)
	}
	if diff := cmp.Diff([]string{"updated E-1", "unchanged E-2"}, statuses(res)); diff != "" {
		t.Errorf("update (-want +got):\n%s", diff)
	}

	// Upsert by the unique field: one updated, one created.
	r, res = e.batch("upsert", map[string]any{"id_property": "erp_id", "inputs": []any{
		map[string]any{"title": "A3", "custom_fields": map[string]any{"erp_id": "E-1", "tier": "gold"}}, in("C", "E-3")}})
	if r.Status != http.StatusOK {
		t.Fatalf("upsert: %d %s", r.Status, r.Body)
	}
	if diff := cmp.Diff([]string{"updated E-1", "created E-3"}, statuses(res)); diff != "" {
		t.Errorf("upsert (-want +got):\n%s", diff)
	}
	if res[0].Record.ID != a || res[0].Record.Title != "A3" || res[0].Record.CustomFields["tier"] != "gold" {
		t.Errorf("upserted %+v", res[0].Record)
	}
	c := res[1].Record.ID

	// Read by id and by external id.
	_, res = e.batch("read", map[string]any{"ids": []int64{b, 999999}})
	if diff := cmp.Diff([]string{"unchanged E-2", "not_found -"}, statuses(res)); diff != "" {
		t.Errorf("read (-want +got):\n%s", diff)
	}
	_, res = e.batch("read", map[string]any{"id_property": "erp_id", "values": []string{"E-3", "E-9"}})
	if diff := cmp.Diff([]string{"unchanged E-3", "not_found -"}, statuses(res)); diff != "" {
		t.Errorf("read by erp_id (-want +got):\n%s", diff)
	}

	// The read of one deal by external id.
	var one cfDeal
	e.data(e.do("GET", "/deals/E-3?id_property=erp_id", e.user, nil), http.StatusOK, &one)
	if one.ID != c {
		t.Errorf("by erp_id: %d, want %d", one.ID, c)
	}
	wantProblem(t, e.do("GET", "/deals/E-9?id_property=erp_id", e.user, nil), http.StatusNotFound, "not_found")
	wantProblem(t, e.do("GET", "/deals/gold?id_property=tier", e.user, nil), http.StatusUnprocessableEntity, "validation_failed", "id_property")

	// Delete: deleted, not_found.
	r, res = e.batch("delete", map[string]any{"ids": []int64{c, 999999}})
	if r.Status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if diff := cmp.Diff([]string{"deleted -", "not_found -"}, statuses(res)); diff != "" {
		t.Errorf("delete (-want +got):\n%s", diff)
	}

	// One event per record written, carrying its custom fields.
	wantEvents := []string{"deal.created E-1", "deal.created E-2", "deal.updated E-1", "deal.updated E-1",
		"deal.created E-3", "deal.deleted -"}
	if diff := cmp.Diff(wantEvents, e.events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestDealBatchRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.define()
	many := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"title": fmt.Sprintf("D%d", i), "custom_fields": map[string]any{"erp_id": fmt.Sprintf("E-%d", i)}}
		}
		return out
	}
	wantProblem(t, e.do("POST", "/deals/batch/create", e.user, map[string]any{"inputs": []any{}}),
		http.StatusUnprocessableEntity, "validation_failed", "inputs")
	wantProblem(t, e.do("POST", "/deals/batch/create", e.user, map[string]any{"inputs": many(101)}),
		http.StatusUnprocessableEntity, "validation_failed", "inputs")
	// One bad input among 100: nothing is written, the error names it.
	bad := many(100)
	bad[37] = map[string]any{"title": "x", "value": "1.234", "custom_fields": map[string]any{"tier": "bronze"}}
	wantProblem(t, e.do("POST", "/deals/batch/create", e.user, map[string]any{"inputs": bad}),
		http.StatusUnprocessableEntity, "validation_failed", "inputs[37].value", "inputs[37].custom_fields.tier")
	if n := e.count(); n != 0 {
		t.Errorf("%d deals written", n)
	}
	// The same unique value twice in one batch.
	twice := many(2)
	twice[1] = twice[0]
	wantProblem(t, e.do("POST", "/deals/batch/create", e.user, map[string]any{"inputs": twice}),
		http.StatusUnprocessableEntity, "validation_failed", "inputs[1].custom_fields.erp_id")
	wantProblem(t, e.do("POST", "/deals/batch/upsert", e.user, map[string]any{"id_property": "erp_id", "inputs": twice}),
		http.StatusUnprocessableEntity, "validation_failed", "inputs[1].custom_fields.erp_id")
	// Upsert needs a unique field, and each input's value of it.
	wantProblem(t, e.do("POST", "/deals/batch/upsert", e.user, map[string]any{"id_property": "tier", "inputs": many(1)}),
		http.StatusUnprocessableEntity, "validation_failed", "id_property")
	wantProblem(t, e.do("POST", "/deals/batch/upsert", e.user, map[string]any{"id_property": "erp_id",
		"inputs": []any{map[string]any{"title": "x"}}}),
		http.StatusUnprocessableEntity, "validation_failed", "inputs[0].custom_fields.erp_id")
	// Update: an unknown id, an id twice, a deal outside the caller's scope.
	var mine, theirs cfDeal
	e.data(e.do("POST", "/deals", e.user, map[string]any{"title": "Mine"}), http.StatusCreated, &mine)
	e.data(e.do("POST", "/deals", e.other, map[string]any{"title": "Theirs"}), http.StatusCreated, &theirs)
	if _, err := e.db.Exec(context.Background(), `UPDATE directory_users SET edit_scope = 'own' WHERE id = $1`, userID); err != nil {
		t.Fatal(err)
	}
	wantProblem(t, e.do("POST", "/deals/batch/update", e.user, map[string]any{"inputs": []any{
		map[string]any{"id": 999999, "title": "x"}, map[string]any{"id": mine.ID, "title": "x"}, map[string]any{"id": mine.ID, "title": "y"}}}),
		http.StatusUnprocessableEntity, "validation_failed", "inputs[2].id")
	wantProblem(t, e.do("POST", "/deals/batch/update", e.user, map[string]any{"inputs": []any{
		map[string]any{"id": 999999, "title": "x"}, map[string]any{"id": theirs.ID, "title": "x"}}}),
		http.StatusUnprocessableEntity, "validation_failed", "inputs[0].id", "inputs[1].id")
	wantProblem(t, e.do("POST", "/deals/batch/delete", e.user, map[string]any{"ids": []int64{mine.ID, theirs.ID}}),
		http.StatusUnprocessableEntity, "validation_failed", "ids[1]")
	wantProblem(t, e.do("POST", "/deals/batch/delete", e.user, map[string]any{"ids": []int64{}}),
		http.StatusUnprocessableEntity, "validation_failed", "ids")
	if n := e.count(); n != 2 {
		t.Errorf("%d deals, want 2", n)
	}
}
