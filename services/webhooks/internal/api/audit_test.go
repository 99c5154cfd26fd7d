package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/identityapi"
)

// TestSubscriptionChangesAreAudited: creating, changing, rotating and
// deleting a subscription each record their audit entry on the audit
// stream (crm:audit), as the caller's, the URL without its query (where a
// receiver's credentials may sit); a refused change records nothing.
func TestSubscriptionChangesAreAudited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	h := e.create("http://hooks.example.com/crm?token=s3cret", "contact.created")
	path := "/webhooks/" + strconv.FormatInt(h.ID, 10)
	if r := e.do(http.MethodPut, path, e.admin, `{"events":["*"],"active":false}`); r.status != http.StatusOK {
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodPut, path, e.admin, `{"url":"ftp://x","events":[]}`); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("bad update: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodPost, path+"/rotate-secret", e.admin, nil); r.status != http.StatusOK {
		t.Fatalf("rotate: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodDelete, path, e.admin, nil); r.status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}

	rows, err := e.db.Query(context.Background(), `SELECT payload::text FROM outbox WHERE stream = $1 ORDER BY id`, identityapi.AuditStream)
	if err != nil {
		t.Fatal(err)
	}
	payloads, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Context, Action string
		Actor           identityapi.AuditActor
		Target          *identityapi.AuditTarget
		Details         map[string]any
	}
	var got []entry
	for _, p := range payloads {
		var m identityapi.AuditMessage
		if err := json.Unmarshal([]byte(p), &m); err != nil {
			t.Fatal(err)
		}
		en := entry{Context: m.Context, Action: m.Action, Actor: m.Actor, Target: m.Target}
		if err := json.Unmarshal(m.Details, &en.Details); err != nil {
			t.Fatal(err)
		}
		delete(en.Details, "fingerprint") // random
		got = append(got, en)
	}
	seven := int64(7)
	actor := identityapi.AuditActor{Type: "user", ID: &seven}
	target := &identityapi.AuditTarget{Object: "webhook", ID: strconv.FormatInt(h.ID, 10)}
	want := []entry{
		{"webhooks", "webhook.created", actor, target, map[string]any{"url": "http://hooks.example.com/crm",
			"events": []any{"contact.created"}, "description": "", "active": true, "owner": float64(7)}},
		{"webhooks", "webhook.updated", actor, target, map[string]any{"changes": []any{
			map[string]any{"field": "events", "from": []any{"contact.created"}, "to": []any{"*"}},
			map[string]any{"field": "active", "from": true, "to": false}}}},
		{"webhooks", "webhook.secret_rotated", actor, target, map[string]any{"grace_seconds": float64(86400)}},
		{"webhooks", "webhook.deleted", actor, target, map[string]any{"url": "http://hooks.example.com/crm",
			"events": []any{"*"}, "description": "", "active": false, "owner": float64(7)}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit entries (-want +got):\n%s", diff)
	}
}
