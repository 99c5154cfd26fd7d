package api_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/opencrm/crm/pkg/outbox"
)

// TestIdentityEventsUnknown: identity's stream as a newer release may
// fill it: a user.updated with fields this release does not know (at the
// top and in data) still renames the lead's assignee, and an event of a
// type it does not know is ignored, each without an error (acknowledged,
// never retried in a loop).
func TestIdentityEventsUnknown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createLead(map[string]any{"first_name": "Un", "last_name": "Known", "assigned_to": 3})
	for _, body := range []string{
		`{"id":1,"type":"user.updated","schema_version":1,"aggregate_id":"3","occurred_at":"2099-01-01T00:00:00Z","shard":"eu",
			"data":{"id":3,"name":"Tom Unknown","email":"tom@example.com","role":"user","team_id":null,"active":true,
				"updated_at":"2099-01-01T00:00:00Z","avatar_url":"https://example.com/t.png","locale":{"lang":"en"}}}`,
		`{"id":2,"type":"user.renamed","schema_version":1,"aggregate_id":"3","occurred_at":"2099-01-01T00:00:01Z",
			"data":{"id":3,"name":"Should Not Apply","updated_at":"2099-01-02T00:00:00Z"}}`,
	} {
		var ev outbox.Event
		if err := json.Unmarshal([]byte(body), &ev); err != nil {
			t.Fatal(err)
		}
		if err := e.store.IdentityHandler()(context.Background(), ev); err != nil {
			t.Fatalf("%s: %v", ev.Type, err)
		}
	}
	r := e.do("GET", path("/leads/{id}", id), e.user, nil)
	if got := r.json(t)["data"].(map[string]any)["assigned_to_name"]; got != "Tom Unknown" {
		t.Fatalf("assigned_to_name = %v, want Tom Unknown", got)
	}
}
