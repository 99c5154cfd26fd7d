package directory_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/testdb"
)

// TestHandleIgnoresUnknown: identity's events as a newer release may send
// them (fields this one does not know, at the top and in data; a type it
// does not know) are handled without error: the known ones applied, the
// unknown type ignored, so the consumer acknowledges each and never loops.
func TestHandleIgnoresUnknown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "dirtest", directory.Migrate, directory.Migrations)
	h := directory.Handle(d)
	for _, body := range []string{
		`{"id":1,"type":"user.created","schema_version":1,"aggregate_id":"7","occurred_at":"2026-11-28T10:00:00Z","region":"eu",
			"data":{"id":7,"name":"Ada","email":"ada@example.com","role":"admin","team_id":3,"active":true,"edit_scope":"team",
				"updated_at":"2026-11-28T10:00:00Z","avatar_url":"https://example.com/ada.png","locale":{"lang":"en"}}}`,
		`{"id":2,"type":"user.teleported","schema_version":1,"aggregate_id":"7","occurred_at":"2026-11-28T10:00:01Z",
			"data":{"id":7,"name":"Mallory","role":"user","active":false,"updated_at":"2026-11-28T11:00:00Z"}}`,
		`{"id":3,"type":"team.deleted","schema_version":1,"aggregate_id":"3","occurred_at":"2026-11-28T10:00:02Z",
			"data":{"id":3,"name":"Sales","updated_at":"2026-11-28T10:00:02Z","members":[7]}}`,
	} {
		var ev outbox.Event
		if err := json.Unmarshal([]byte(body), &ev); err != nil {
			t.Fatal(err)
		}
		if err := h(ctx, ev); err != nil {
			t.Fatalf("%s: %v", ev.Type, err)
		}
	}
	type row struct {
		Name, Role, Scope string
		TeamID            *int64
		Active            bool
	}
	var got row
	if err := d.QueryRow(ctx, `SELECT name, role, edit_scope, team_id, active FROM directory_users WHERE id = 7`).
		Scan(&got.Name, &got.Role, &got.Scope, &got.TeamID, &got.Active); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(row{Name: "Ada", Role: "admin", Scope: "team", Active: true}, got); diff != "" {
		t.Errorf("user 7 (-want +got):\n%s", diff)
	}
}
