package api_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/webhooks/internal/ingest"
)

// TestOwnersEventsUnknown: identity's stream as a newer release may fill
// it: an event of a type this release does not know is ignored, and a
// user.updated with fields it does not know (at the top and in data) is
// applied, each without an error (acknowledged, never retried in a loop).
func TestOwnersEventsUnknown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	owners, err := ingest.NewOwners(e.store, e.log)
	if err != nil {
		t.Fatal(err)
	}
	handle := func(body string) {
		t.Helper()
		var ev outbox.Event
		if err := json.Unmarshal([]byte(body), &ev); err != nil {
			t.Fatal(err)
		}
		if err := owners.Handle(context.Background(), ev); err != nil {
			t.Fatalf("%s: %v", ev.Type, err)
		}
	}
	handle(`{"id":1,"type":"user.created","schema_version":1,"aggregate_id":"21","occurred_at":"2026-11-28T10:00:00Z",
		"data":{"id":21,"name":"Ann","email":"ann@example.com","role":"admin","active":true,"updated_at":"2026-11-28T10:00:00Z"}}`)
	h := e.createAs(e.issuer.Admin(t, 21), "http://127.0.0.1:1/x", "*")
	active := func() bool {
		for _, x := range decode[page[hook]](t, e.do("GET", "/webhooks", e.admin, nil)).Data {
			if x.ID == h.ID {
				return x.Active
			}
		}
		t.Fatalf("webhook %d not listed", h.ID)
		return false
	}
	handle(`{"id":2,"type":"user.suspended","schema_version":1,"aggregate_id":"21","occurred_at":"2026-11-28T10:00:01Z",
		"data":{"id":21,"role":"user","active":false,"updated_at":"2026-11-28T10:00:01Z"}}`)
	if !active() {
		t.Fatal("an event of an unknown type disabled the subscription")
	}
	handle(`{"id":3,"type":"user.updated","schema_version":1,"aggregate_id":"21","occurred_at":"2026-11-28T10:00:02Z","shard":"eu",
		"data":{"id":21,"name":"Ann","email":"ann@example.com","role":"admin","active":false,"updated_at":"2026-11-28T10:00:02Z",
			"avatar_url":"https://example.com/a.png","locale":{"lang":"en"}}}`)
	if active() {
		t.Fatal("user.updated with unknown fields (deactivated) left the subscription active")
	}
}
