package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// createdEvents counts the contacts the outbox announces created: one per
// contact.created, one per record a batch call's contacts.imported
// carries.
const createdEvents = `SELECT count(*) FILTER (WHERE type = 'contact.created')
	+ coalesce(sum(json_array_length(payload -> 'records')) FILTER (WHERE type = 'contacts.imported'), 0) FROM outbox`

// batchResults are a batch answer's statuses and record ids (0 for none).
func batchResults(t testing.TB, r resp) (statuses []string, ids []int64) {
	t.Helper()
	if r.Body["success"] != true {
		t.Fatalf("batch answer %s", r.Raw)
	}
	for _, x := range r.Body["data"].([]any) {
		res := x.(map[string]any)
		statuses = append(statuses, res["status"].(string))
		var id int64
		if rec, ok := res["record"].(map[string]any); ok {
			id = int64(rec["id"].(float64))
		}
		ids = append(ids, id)
	}
	return statuses, ids
}

// keyed sends a JSON request with a bearer token and an Idempotency-Key.
func (e *env) keyed(t testing.TB, path, token, key string, body any) resp {
	t.Helper()
	b, _ := json.Marshal(body)
	req := httptest.NewRequest("POST", path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	return e.serve(t, req)
}

func person(i int, extra map[string]any) map[string]any {
	in := map[string]any{"first_name": fmt.Sprint("P", i), "last_name": "Batch"}
	for k, v := range extra {
		in[k] = v
	}
	return in
}

func TestContactBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.withFields(t)

	// create: in input order, one event per record.
	r := e.do(t, "POST", "/contacts/batch/create", e.user, map[string]any{"inputs": []any{
		person(0, map[string]any{"email": "p0@x.test", "custom_fields": map[string]any{"erp_id": "E-0"}}),
		person(1, map[string]any{"email": "p1@x.test", "custom_fields": map[string]any{"erp_id": "E-1", "tier": "gold"}}),
		person(2, nil),
	}})
	wantStatus(t, r, 200)
	st, ids := batchResults(t, r)
	if diff := cmp.Diff([]string{"created", "created", "created"}, st); diff != "" || r.Body["message"] != "contacts created" {
		t.Fatalf("create: message %v, statuses (-want +got):\n%s", r.Body["message"], diff)
	}
	if rec := r.Body["data"].([]any)[1].(map[string]any)["record"].(map[string]any); rec["first_name"] != "P1" ||
		rec["custom_fields"].(map[string]any)["tier"] != "gold" {
		t.Errorf("second record %v", rec)
	}
	if n := e.count(t, createdEvents); n != 3 {
		t.Errorf("%d contacts announced created, want 3", n)
	}
	if n := e.count(t, `SELECT count(*) FROM outbox WHERE type = 'contacts.imported'`); n != 1 {
		t.Errorf("%d contacts.imported events, want 1 (the batch's)", n)
	}

	// update: changed and unchanged records; only the changed one publishes.
	r = e.do(t, "POST", "/contacts/batch/update", e.user, map[string]any{"inputs": []any{
		map[string]any{"id": ids[0], "first_name": "P0", "last_name": "Batch", "job_title": "CEO"},
		map[string]any{"id": ids[1], "first_name": "P1", "last_name": "Batch"},
	}})
	wantStatus(t, r, 200)
	if st, _ := batchResults(t, r); !cmp.Equal([]string{"updated", "unchanged"}, st) {
		t.Errorf("update statuses %v", st)
	}
	if n := e.count(t, `SELECT count(*) FROM outbox WHERE type = 'contact.updated'`); n != 1 {
		t.Errorf("%d contact.updated events, want 1", n)
	}

	// upsert by email and by a unique custom field.
	r = e.do(t, "POST", "/contacts/batch/upsert", e.user, map[string]any{"id_property": "email", "inputs": []any{
		person(0, map[string]any{"email": "P0@X.test", "job_title": "CTO"}),
		person(9, map[string]any{"email": "p9@x.test"}),
	}})
	wantStatus(t, r, 200)
	st, up := batchResults(t, r)
	if !cmp.Equal([]string{"updated", "created"}, st) || up[0] != ids[0] {
		t.Errorf("upsert by email: %v %v", st, up)
	}
	r = e.do(t, "POST", "/contacts/batch/upsert", e.user, map[string]any{"id_property": "erp_id", "inputs": []any{
		person(1, map[string]any{"custom_fields": map[string]any{"erp_id": "E-1", "tier": "silver"}}),
		person(7, map[string]any{"custom_fields": map[string]any{"erp_id": "E-7"}}),
	}})
	wantStatus(t, r, 200)
	st, up = batchResults(t, r)
	if !cmp.Equal([]string{"updated", "created"}, st) || up[0] != ids[1] {
		t.Errorf("upsert by erp_id: %v %v", st, up)
	}
	e7 := up[1]

	// read by id and by external id, in input order.
	r = e.do(t, "POST", "/contacts/batch/read", e.user, map[string]any{"ids": []int64{ids[2], 999999, ids[0]}})
	wantStatus(t, r, 200)
	if st, got := batchResults(t, r); !cmp.Equal([]string{"unchanged", "not_found", "unchanged"}, st) || got[0] != ids[2] || got[2] != ids[0] {
		t.Errorf("read by id: %v %v", st, got)
	}
	r = e.do(t, "POST", "/contacts/batch/read", e.user, map[string]any{"id_property": "erp_id", "values": []string{"E-7", "E-404"}})
	wantStatus(t, r, 200)
	if st, got := batchResults(t, r); !cmp.Equal([]string{"unchanged", "not_found"}, st) || got[0] != e7 {
		t.Errorf("read by erp_id: %v %v", st, got)
	}

	// GET one by an external id.
	r = e.do(t, "GET", "/contacts/E-7?id_property=erp_id", e.user, nil)
	wantStatus(t, r, 200)
	if id(t, r) != e7 {
		t.Errorf("by erp_id: %v", r.Body)
	}
	r = e.do(t, "GET", "/contacts/p9@x.test?id_property=email", e.user, nil)
	wantStatus(t, r, 200)
	wantProblem(t, e.do(t, "GET", "/contacts/E-404?id_property=erp_id", e.user, nil), 404, "not_found")
	wantProblem(t, e.do(t, "GET", "/contacts/gold?id_property=tier", e.user, nil), 422, "validation_failed", "id_property")

	// delete: deleted and not_found, one event per deleted record.
	r = e.do(t, "POST", "/contacts/batch/delete", e.user, map[string]any{"ids": []int64{ids[2], 999999}})
	wantStatus(t, r, 200)
	if st, _ := batchResults(t, r); !cmp.Equal([]string{"deleted", "not_found"}, st) || r.Body["message"] != "contacts deleted" {
		t.Errorf("delete: %v %v", st, r.Body)
	}
	if n := e.count(t, `SELECT count(*) FROM outbox WHERE type = 'contact.deleted'`); n != 1 {
		t.Errorf("%d contact.deleted events, want 1", n)
	}
}

func TestContactBatchRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.withFields(t)
	before := e.count(t, `SELECT count(*) FROM contacts`)

	wantProblem(t, e.do(t, "POST", "/contacts/batch/create", e.user, map[string]any{"inputs": []any{}}), 422, "validation_failed", "inputs")
	many := make([]any, 101)
	for i := range many {
		many[i] = person(i, nil)
	}
	wantProblem(t, e.do(t, "POST", "/contacts/batch/create", e.user, map[string]any{"inputs": many}), 422, "validation_failed", "inputs")

	// One bad input among 100: nothing is written, the error names it.
	hundred := many[:100]
	hundred[37] = map[string]any{"first_name": "X", "last_name": "", "email": "nope"}
	hundred[64] = person(64, map[string]any{"custom_fields": map[string]any{"tier": "bronze"}})
	wantProblem(t, e.do(t, "POST", "/contacts/batch/create", e.user, map[string]any{"inputs": hundred}), 422, "validation_failed",
		"inputs[37].last_name", "inputs[37].email", "inputs[64].custom_fields.tier")
	// The same unique value twice in one batch.
	wantProblem(t, e.do(t, "POST", "/contacts/batch/create", e.user, map[string]any{"inputs": []any{
		person(1, map[string]any{"custom_fields": map[string]any{"erp_id": "E-1"}}),
		person(2, map[string]any{"custom_fields": map[string]any{"erp_id": "E-1"}}),
	}}), 422, "validation_failed", "inputs[1].custom_fields.erp_id")
	// The same id_property value twice in one upsert.
	wantProblem(t, e.do(t, "POST", "/contacts/batch/upsert", e.user, map[string]any{"id_property": "email", "inputs": []any{
		person(1, map[string]any{"email": "a@x.test"}), person(2, map[string]any{"email": "A@x.test"}),
	}}), 422, "validation_failed", "inputs[1].email")
	// An input without the id_property, and an id_property that is no external id.
	wantProblem(t, e.do(t, "POST", "/contacts/batch/upsert", e.user, map[string]any{"id_property": "email", "inputs": []any{person(1, nil)}}),
		422, "validation_failed", "inputs[0].email")
	wantProblem(t, e.do(t, "POST", "/contacts/batch/upsert", e.user, map[string]any{"id_property": "tier", "inputs": []any{person(1, nil)}}),
		422, "validation_failed", "id_property")
	// An update of an unknown contact.
	wantProblem(t, e.do(t, "POST", "/contacts/batch/update", e.user, map[string]any{"inputs": []any{
		map[string]any{"id": 999999, "first_name": "A", "last_name": "B"},
	}}), 422, "validation_failed", "inputs[0]")
	if n := e.count(t, `SELECT count(*) FROM contacts`); n != before {
		t.Errorf("%d contacts written by refused batches", n-before)
	}
}

func TestContactBatchIdempotency(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := map[string]any{"inputs": []any{person(1, nil), person(2, nil)}}
	first := e.keyed(t, "/contacts/batch/create", e.user, "batch-1", body)
	wantStatus(t, first, 200)
	again := e.keyed(t, "/contacts/batch/create", e.user, "batch-1", body)
	wantStatus(t, again, 200)
	if again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay not marked: %v", again.Header)
	}
	_, a := batchResults(t, first)
	_, b := batchResults(t, again)
	if !cmp.Equal(a, b) {
		t.Errorf("replay answered %v, first %v", b, a)
	}
	if n := e.count(t, `SELECT count(*) FROM contacts`); n != 2 {
		t.Errorf("%d contacts after a replay, want 2", n)
	}
	if n := e.count(t, createdEvents); n != 2 {
		t.Errorf("%d contacts announced created after a replay, want 2", n)
	}
	other := map[string]any{"inputs": []any{person(3, nil)}}
	wantProblem(t, e.keyed(t, "/contacts/batch/create", e.user, "batch-1", other), 409, "idempotency_key_reused")
	// A key names one operation: the same inputs upserted under it are another request.
	wantProblem(t, e.keyed(t, "/contacts/batch/upsert", e.user, "batch-1", map[string]any{"id_property": "email",
		"inputs": []any{person(1, map[string]any{"email": "p1@x.test"})}}), 409, "idempotency_key_reused")

	// An upsert replayed answers what it did the first time, not what it would do now.
	up := map[string]any{"id_property": "email", "inputs": []any{person(4, map[string]any{"email": "p4@x.test"})}}
	first = e.keyed(t, "/contacts/batch/upsert", e.user, "upsert-1", up)
	wantStatus(t, first, 200)
	again = e.keyed(t, "/contacts/batch/upsert", e.user, "upsert-1", up)
	wantStatus(t, again, 200)
	if st, _ := batchResults(t, again); !cmp.Equal([]string{"created"}, st) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replayed upsert %v %v", st, again.Header)
	}
	if n := e.count(t, `SELECT count(*) FROM contacts`); n != 3 {
		t.Errorf("%d contacts after a replayed upsert, want 3", n)
	}
}

func TestCompanyBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do(t, "POST", "/companies/batch/upsert", e.user, map[string]any{"id_property": "domain", "inputs": []any{
		map[string]any{"name": "Acme", "domain": "acme.test"},
	}})
	wantStatus(t, r, 200)
	_, ids := batchResults(t, r)
	r = e.do(t, "POST", "/companies/batch/upsert", e.user, map[string]any{"id_property": "domain", "inputs": []any{
		map[string]any{"name": "Acme Ltd", "domain": "ACME.test"}, map[string]any{"name": "Initech", "domain": "initech.test"},
	}})
	wantStatus(t, r, 200)
	st, got := batchResults(t, r)
	if !cmp.Equal([]string{"updated", "created"}, st) || got[0] != ids[0] || r.Body["message"] != "companies upserted" {
		t.Errorf("company upsert: %v %v %v", st, got, r.Body["message"])
	}
	wantStatus(t, e.do(t, "GET", "/companies/acme.test?id_property=domain", e.user, nil), 200)
	r = e.do(t, "POST", "/companies/batch/delete", e.user, map[string]any{"ids": got})
	wantStatus(t, r, 200)
	if st, _ := batchResults(t, r); !cmp.Equal([]string{"deleted", "deleted"}, st) {
		t.Errorf("company delete %v", st)
	}
	wantProblem(t, e.do(t, "POST", "/companies/batch/delete", e.user, map[string]any{"ids": []int64{5, 5}}), 422, "validation_failed", "inputs[1].id")
}

// TestGetByEmptyIDProperty: a GET with ?id_property= present but empty
// names no property, so it is refused (422 id_property) as leads and deals
// refuse it (bulkhttp.ByIDProperty), not read by the path's id; without
// the parameter the path is the id.
func TestGetByEmptyIDProperty(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	contact := id(t, e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": "Ada", "last_name": "L", "email": "ada@x.test"}))
	company := id(t, e.do(t, "POST", "/companies", e.user, map[string]any{"name": "Acme", "domain": "acme.test"}))
	for _, tc := range []struct {
		path string
		id   int64
		want string
	}{
		{"/contacts", contact, "must be email or a unique custom field of contacts"},
		{"/companies", company, "must be domain or a unique custom field of companies"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			at := fmt.Sprintf("%s/%d", tc.path, tc.id)
			wantExact(t, e.do(t, "GET", at+"?id_property=", e.user, nil), 422, invalid("id_property", tc.want))
			r := e.do(t, "GET", at, e.user, nil)
			wantStatus(t, r, 200)
			if got := id(t, r); got != tc.id {
				t.Errorf("GET %s: id %d", at, got)
			}
		})
	}
}
