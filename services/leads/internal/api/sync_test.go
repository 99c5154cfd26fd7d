package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/outbox"
)

// TestSyncBadInput: updated_since that is not RFC 3339, and a cursor
// outside the sync order, are 422s naming the parameter, on the list and
// the export.
func TestSyncBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rfc := "must be an RFC 3339 timestamp such as 2026-01-02T15:04:05Z"
	tests := []struct {
		path, field, message string
	}{
		{"/leads?updated_since=2026-01-02", "updated_since", rfc},
		{"/leads?updated_since=last%20week", "updated_since", rfc},
		{"/leads/export?updated_since=2026-01-02%2010:00:00", "updated_since", rfc},
		{"/leads?updated_since=2026-01-02T10:00:00Z&sort_by=name&after_id=3", "after_id", "requires updated_since, sort_by=updated_at and sort_dir=asc"},
	}
	for _, tt := range tests {
		m := wantProblem(t, e.do("GET", tt.path, e.admin, nil), 422, "validation_failed", tt.field)
		want := []any{map[string]any{"field": tt.field, "message": tt.message}}
		if diff := cmp.Diff(want, m["errors"]); diff != "" {
			t.Errorf("%s errors (-want +got):\n%s", tt.path, diff)
		}
	}
}

// TestSyncSeesEveryLeadChange: every way a lead changes moves its
// updated_at (edit, qualify, disqualify, and its assignee's rename, which
// rewrites the stored assigned_to_name), so a sync since before the changes
// returns exactly the changed leads, in the order they changed.
func TestSyncSeesEveryLeadChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	edited := e.createLead(map[string]any{"first_name": "Ed", "last_name": "Ited"})
	qualified := e.createLead(map[string]any{"first_name": "Qu", "last_name": "Alified"})
	disqualified := e.createLead(map[string]any{"first_name": "Dis", "last_name": "Qualified"})
	renamed := e.createLead(map[string]any{"first_name": "Re", "last_name": "Named", "assigned_to": 3})
	untouched := e.createLead(map[string]any{"first_name": "Un", "last_name": "Touched", "assigned_to": 4})
	time.Sleep(2 * time.Millisecond)
	since := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")

	if r := e.do("PUT", path("/leads/{id}", edited), e.user, map[string]any{"first_name": "Edd", "last_name": "Ited"}); r.status != 200 {
		t.Fatalf("edit: %d %s", r.status, r.body)
	}
	if r := e.do("POST", path("/leads/{id}/qualify", qualified), e.user, nil); r.status != 200 {
		t.Fatalf("qualify: %d %s", r.status, r.body)
	}
	if r := e.do("PUT", path("/leads/{id}/disqualify", disqualified), e.user, map[string]any{"reason": "no budget"}); r.status != 200 {
		t.Fatalf("disqualify: %d %s", r.status, r.body)
	}
	u := directory.User{ID: 3, Name: "Tom Renamed", Email: "tom@example.com", Role: "user", Active: true, UpdatedAt: time.Now().Add(time.Minute)}
	data, _ := json.Marshal(u)
	if err := e.store.IdentityHandler()(context.Background(), outbox.Event{Type: directory.UserUpdated, Data: data}); err != nil {
		t.Fatal(err)
	}

	r := e.do("GET", "/leads?sort_by=updated_at&sort_dir=asc&updated_since="+url.QueryEscape(since), e.user, nil)
	if r.status != 200 {
		t.Fatalf("sync: %d %s", r.status, r.body)
	}
	var got []any
	for _, d := range r.json(t)["data"].([]any) {
		got = append(got, d.(map[string]any)["id"])
	}
	want := []any{float64(edited), float64(qualified), float64(disqualified), float64(renamed)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("leads changed since %s (lead %d untouched) (-want +got):\n%s", since, untouched, diff)
	}

	// The export takes the same filter: the header and the four changed rows.
	r = e.do("GET", "/leads/export?sort_by=updated_at&updated_since="+url.QueryEscape(since), e.admin, nil)
	if r.status != 200 {
		t.Fatalf("export: %d %s", r.status, r.body)
	}
	var exported []string
	for _, line := range strings.Split(strings.TrimSpace(string(r.body)), "\n")[1:] {
		exported = append(exported, strings.SplitN(line, ",", 2)[0])
	}
	wantIDs := []string{fmt.Sprint(edited), fmt.Sprint(qualified), fmt.Sprint(disqualified), fmt.Sprint(renamed)}
	if diff := cmp.Diff(wantIDs, exported); diff != "" {
		t.Errorf("exported ids (-want +got):\n%s\n%s", diff, r.body)
	}
}
