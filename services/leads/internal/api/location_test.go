package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCreatedLocation: every 201 leads answers on a public route names
// where the new record lives under /api, as the gateway used to add it.
func TestCreatedLocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lead := e.createLead(map[string]any{"first_name": "Loc", "last_name": "Ation"})
	tests := []struct {
		name, path string
		body       map[string]any
		want       func(id float64) string
	}{
		{"lead", "/leads", map[string]any{"first_name": "Ada", "last_name": "Lovelace"},
			func(id float64) string { return fmt.Sprintf("/api/leads/%.0f", id) }},
		{"note", fmt.Sprintf("/leads/%d/notes", lead), map[string]any{"content": "called"},
			func(id float64) string { return fmt.Sprintf("/api/leads/%d/notes/%.0f", lead, id) }},
		{"task", fmt.Sprintf("/leads/%d/tasks", lead), map[string]any{"title": "call back"},
			func(id float64) string { return fmt.Sprintf("/api/leads/%d/tasks/%.0f", lead, id) }},
	}
	for _, tc := range tests {
		r := e.do(http.MethodPost, tc.path, e.user, tc.body)
		if r.status != http.StatusCreated {
			t.Fatalf("%s: %d %s", tc.name, r.status, r.body)
		}
		id := r.json(t)["data"].(map[string]any)["id"].(float64)
		if diff := cmp.Diff(tc.want(id), r.header.Get("Location")); diff != "" {
			t.Errorf("%s: Location (-want +got):\n%s", tc.name, diff)
		}
	}
}
