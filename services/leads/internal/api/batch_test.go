package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/problem"
)

const batchRequestID = "req-batch-1"

// batchItem is one entry of a batch answer's data.
type batchItem struct {
	Status   int             `json:"status"`
	Body     json.RawMessage `json:"body"`
	Replayed bool            `json:"replayed"`
}

// postBatch sends POST /internal/leads/batch with the internal token
// unless anonymous.
func (e *env) postBatch(body any, anonymous bool) resp {
	e.t.Helper()
	raw, ok := body.(string)
	if !ok {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		raw = string(b)
	}
	req := httptest.NewRequest("POST", leadsapi.PathBatch, strings.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", batchRequestID)
	if !anonymous {
		req.Header.Set("X-Internal-Token", secret)
	}
	return e.serve(req)
}

// postSingle sends POST /internal/leads with an Idempotency-Key.
func (e *env) postSingle(key string, lead map[string]any) resp {
	e.t.Helper()
	raw, _ := json.Marshal(lead)
	req := httptest.NewRequest("POST", leadsapi.PathLeads, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Internal-Token", secret)
	req.Header.Set("Idempotency-Key", key)
	return e.serve(req)
}

// batchItems checks the 200 envelope and returns its items.
func batchItems(t *testing.T, r resp) []batchItem {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("batch: status %d, want 200: %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("batch: Content-Type %q", ct)
	}
	var env struct {
		Success bool        `json:"success"`
		Data    []batchItem `json:"data"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatalf("batch body: %v: %s", err, r.body)
	}
	if !env.Success {
		t.Fatalf("batch: success false: %s", r.body)
	}
	return env.Data
}

// createdLead checks a 201 item's body and returns its lead.
func createdLead(t *testing.T, it batchItem) map[string]any {
	t.Helper()
	if it.Status != http.StatusCreated {
		t.Fatalf("item status %d, want 201: %s", it.Status, it.Body)
	}
	var body map[string]any
	if err := json.Unmarshal(it.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body["success"] != true || body["message"] != "Lead created" {
		t.Fatalf("item envelope: %s", it.Body)
	}
	return body["data"].(map[string]any)
}

func itemBody(t *testing.T, it batchItem) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(it.Body, &m); err != nil {
		t.Fatalf("item body: %v: %s", err, it.Body)
	}
	return m
}

// problemJSON is a problem body as decoded JSON, with this file's request id.
func problemJSON(status int, code, detail string, fields ...[2]string) map[string]any {
	m := map[string]any{
		"type": "/docs/problems#" + code, "title": http.StatusText(status), "status": float64(status),
		"code": code, "detail": detail, "request_id": batchRequestID,
	}
	if len(fields) > 0 {
		errs := []any{}
		for _, f := range fields {
			errs = append(errs, map[string]any{"field": f[0], "message": f[1]})
		}
		m["errors"] = errs
	}
	return m
}

func (e *env) countRows(sql string) int {
	e.t.Helper()
	var n int
	if err := e.store.DB().QueryRow(context.Background(), sql).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func TestInternalBatchCreatesAndReplays(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	batch := map[string]any{"items": []any{
		map[string]any{"key": "intake-1", "lead": map[string]any{"first_name": "Ann", "last_name": "One", "email": "ann@in.example", "source": "web-form"}},
		map[string]any{"key": "intake-2", "lead": map[string]any{"first_name": "Ben", "last_name": "Two", "assigned_to": 3}},
		map[string]any{"key": "intake-3", "lead": map[string]any{"first_name": "Cy", "last_name": "Three", "tags": "a, b ,a"}},
	}}
	first := batchItems(t, e.postBatch(batch, false))
	if len(first) != 3 {
		t.Fatalf("items = %d, want 3", len(first))
	}
	var ids []float64
	for i, it := range first {
		if it.Replayed {
			t.Errorf("item %d replayed on first post", i)
		}
		ids = append(ids, createdLead(t, it)["id"].(float64))
	}
	if ids[0] == ids[1] || ids[1] == ids[2] || ids[0] == ids[2] {
		t.Fatalf("ids not distinct: %v", ids)
	}
	// Each lead went through the single create's rules.
	for i, want := range []map[string]any{
		{"first_name": "Ann", "email": "ann@in.example", "source": "web-form", "status": "new", "created_by": nil},
		{"first_name": "Ben", "assigned_to": 3.0, "assigned_to_name": "Tom Teammate"},
		{"first_name": "Cy", "tags": "a,b"},
	} {
		lead := createdLead(t, first[i])
		got := map[string]any{}
		for k := range want {
			got[k] = lead[k]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("lead %d (-want +got):\n%s", i, diff)
		}
	}

	// One lead.created event per lead, carrying the lead as answered.
	type event struct {
		Type, AggregateID string
		Data              map[string]any
	}
	events := func() []event {
		rows, err := e.store.DB().Query(context.Background(),
			`SELECT type, aggregate_id, payload FROM outbox WHERE stream = $1 ORDER BY id`, outbox.Stream("leads"))
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []event
		for rows.Next() {
			var ev event
			var payload []byte
			if err := rows.Scan(&ev.Type, &ev.AggregateID, &payload); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(payload, &ev.Data); err != nil {
				t.Fatal(err)
			}
			out = append(out, ev)
		}
		return out
	}
	var wantEvents []event
	for _, it := range first {
		lead := createdLead(t, it)
		wantEvents = append(wantEvents, event{Type: "lead.created", AggregateID: fmt.Sprint(lead["id"]), Data: lead})
	}
	if diff := cmp.Diff(wantEvents, events()); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}

	// The same batch again: the stored answers, byte for byte, and nothing new.
	again := batchItems(t, e.postBatch(batch, false))
	want := make([]batchItem, len(first))
	for i, it := range first {
		want[i] = batchItem{Status: 201, Body: it.Body, Replayed: true}
	}
	if diff := cmp.Diff(want, again); diff != "" {
		t.Fatalf("replayed batch (-want +got):\n%s", diff)
	}
	if n := e.countRows(`SELECT count(*) FROM leads`); n != 3 {
		t.Fatalf("leads after replay = %d, want 3", n)
	}
	if diff := cmp.Diff(wantEvents, events()); diff != "" {
		t.Fatalf("events after replay (-want +got):\n%s", diff)
	}

	// A single retry of a key the batch created replays it too.
	r := e.postSingle("intake-1", map[string]any{"first_name": "Ann", "last_name": "One", "email": "ann@in.example", "source": "web-form"})
	if r.status != 201 || r.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.body, first[0].Body) {
		t.Fatalf("single retry of a batch key: %d %q %s", r.status, r.header.Get("Idempotent-Replayed"), r.body)
	}
}

// TestInternalBatchItemsFailAlone: invalid items, reused keys and keys
// first used by the single endpoint are answered per item.
func TestInternalBatchItemsFailAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	single := map[string]any{"first_name": "Sia", "last_name": "Single", "email": "sia@in.example"}
	r := e.postSingle("intake-s", single)
	if r.status != 201 {
		t.Fatalf("single create: %d %s", r.status, r.body)
	}
	singleID := r.json(t)["data"].(map[string]any)["id"]

	ok := map[string]any{"first_name": "Oli", "last_name": "Ok"}
	items := batchItems(t, e.postBatch(map[string]any{"items": []any{
		map[string]any{"key": "intake-s", "lead": single},
		map[string]any{"key": "intake-bad", "lead": map[string]any{"first_name": "Bad", "last_name": "Email", "email": "not-an-email"}},
		map[string]any{"key": "intake-ok", "lead": ok},
		map[string]any{"key": "intake-s", "lead": map[string]any{"first_name": "Other", "last_name": "Lead"}},
		map[string]any{"key": "intake-ok", "lead": ok},
		map[string]any{"key": "intake-type", "lead": map[string]any{"first_name": "T", "last_name": "Y", "assigned_to": "x"}},
		map[string]any{"key": "intake-nolead"},
	}}, false))
	if len(items) != 7 {
		t.Fatalf("items = %d, want 7", len(items))
	}

	// 0: the single endpoint's lead, replayed.
	if !items[0].Replayed || createdLead(t, items[0])["id"] != singleID {
		t.Errorf("item 0: want replay of lead %v: %+v %s", singleID, items[0], items[0].Body)
	}
	if !bytes.Equal(items[0].Body, r.body) {
		t.Errorf("item 0 body differs from the single answer:\n%s\n%s", items[0].Body, r.body)
	}
	// 2 created, 4 is its duplicate within the batch.
	okLead := createdLead(t, items[2])
	if items[2].Replayed || !items[4].Replayed || createdLead(t, items[4])["id"] != okLead["id"] {
		t.Errorf("duplicate key in batch: %+v / %+v", items[2], items[4])
	}
	for _, tc := range []struct {
		i    int
		want map[string]any
	}{
		{1, problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"email", "must be a valid email address"})},
		{3, problemJSON(409, "idempotency_key_reused", "this Idempotency-Key was used with a different request")},
		{5, problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"assigned_to", "must be an integer"})},
		{6, problemJSON(400, "malformed_json", "body is empty")},
	} {
		it := items[tc.i]
		if it.Status != int(tc.want["status"].(float64)) || it.Replayed {
			t.Errorf("item %d: status %d replayed %v", tc.i, it.Status, it.Replayed)
		}
		if diff := cmp.Diff(tc.want, itemBody(t, it)); diff != "" {
			t.Errorf("item %d body (-want +got):\n%s", tc.i, diff)
		}
	}
	// The single endpoint answers the same for the invalid body.
	wantProblem(t, e.postSingle("intake-bad", map[string]any{"first_name": "Bad", "last_name": "Email", "email": "not-an-email"}),
		422, "validation_failed", "email")

	if n := e.countRows(`SELECT count(*) FROM leads`); n != 2 {
		t.Fatalf("leads = %d, want 2 (single + intake-ok)", n)
	}
	if n := e.countRows(`SELECT count(*) FROM outbox WHERE type = 'lead.created'`); n != 2 {
		t.Fatalf("lead.created events = %d, want 2", n)
	}
	// A failed item stored nothing: its key is free for a corrected retry.
	items = batchItems(t, e.postBatch(map[string]any{"items": []any{
		map[string]any{"key": "intake-bad", "lead": map[string]any{"first_name": "Bad", "last_name": "Email", "email": "fixed@in.example"}},
	}}, false))
	if createdLead(t, items[0])["email"] != "fixed@in.example" || items[0].Replayed {
		t.Fatalf("corrected retry: %+v %s", items[0], items[0].Body)
	}
}

func TestInternalBatchRejectsTheRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lead := map[string]any{"first_name": "A", "last_name": "B"}
	many := func(n int) map[string]any {
		items := make([]any, n)
		for i := range items {
			items[i] = map[string]any{"key": fmt.Sprintf("k-%d", i), "lead": lead}
		}
		return map[string]any{"items": items}
	}
	countMsg := [2]string{"items", "must hold between 1 and 50 items"}
	for _, tc := range []struct {
		name      string
		body      any
		anonymous bool
		status    int
		want      map[string]any
	}{
		{"no items", map[string]any{"items": []any{}}, false, 422,
			problemJSON(422, "validation_failed", "one or more fields are invalid", countMsg)},
		{"items absent", map[string]any{}, false, 422,
			problemJSON(422, "validation_failed", "one or more fields are invalid", countMsg)},
		{"51 items", many(51), false, 422,
			problemJSON(422, "validation_failed", "one or more fields are invalid", countMsg)},
		{"bad keys", map[string]any{"items": []any{
			map[string]any{"lead": lead},
			map[string]any{"key": "fine", "lead": lead},
			map[string]any{"key": strings.Repeat("k", 256), "lead": lead},
			map[string]any{"key": " ", "lead": lead},
		}}, false, 422, problemJSON(422, "validation_failed", "one or more fields are invalid",
			[2]string{"items[0].key", "is required"},
			[2]string{"items[2].key", "must be at most 255 characters"},
			[2]string{"items[3].key", "is required"})},
		{"items not an array", `{"items":{}}`, false, 422,
			problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"items", "must be an array"})},
		{"malformed", `{"items":[`, false, 400, problemJSON(400, "malformed_json", "body is not valid JSON at offset 0")},
		{"over 4 MB", map[string]any{"items": []any{map[string]any{"key": "big", "lead": map[string]any{
			"first_name": "A", "last_name": "B", "notes": strings.Repeat("n", 4<<20)}}}}, false, 413,
			problemJSON(413, "payload_too_large", "body exceeds 4194304 bytes")},
		{"no internal token", many(1), true, 401, problemJSON(401, "unauthenticated", "internal route")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.postBatch(tc.body, tc.anonymous)
			if r.status != tc.status {
				t.Fatalf("status = %d, want %d: %s", r.status, tc.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); ct != problem.ContentType {
				t.Fatalf("Content-Type = %q", ct)
			}
			if diff := cmp.Diff(tc.want, r.json(t)); diff != "" {
				t.Fatalf("problem (-want +got):\n%s", diff)
			}
		})
	}
	// 50 items is the limit, not over it.
	if items := batchItems(t, e.postBatch(many(50), false)); len(items) != 50 {
		t.Fatalf("50 items: %d answers", len(items))
	}
	if n := e.countRows(`SELECT count(*) FROM leads`); n != 50 {
		t.Fatalf("leads = %d, want 50 (from the 50-item batch only)", n)
	}
}
