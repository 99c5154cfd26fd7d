package api_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCreatedLocation: every 201 of the public API names the new record's
// address under /api, as the gateway used to add it.
func TestCreatedLocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": "Ada", "last_name": "Lovelace"})
	wantStatus(t, r, 201)
	contact := id(t, r)
	tests := []struct {
		name, path string
		body       map[string]any
		want       func(id int64) string
	}{
		{"contact", "/contacts", map[string]any{"first_name": "Alan", "last_name": "Turing"},
			func(id int64) string { return fmt.Sprintf("/api/contacts/%d", id) }},
		{"company", "/companies", map[string]any{"name": "Acme"},
			func(id int64) string { return fmt.Sprintf("/api/companies/%d", id) }},
		{"note", fmt.Sprintf("/contacts/%d/notes", contact), map[string]any{"content": "hello"},
			func(id int64) string { return fmt.Sprintf("/api/contacts/%d/notes/%d", contact, id) }},
		{"task", fmt.Sprintf("/contacts/%d/tasks", contact), map[string]any{"title": "call"},
			func(id int64) string { return fmt.Sprintf("/api/contacts/%d/tasks/%d", contact, id) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := e.do(t, "POST", tt.path, e.user, tt.body)
			wantStatus(t, r, 201)
			if diff := cmp.Diff(tt.want(id(t, r)), r.Header.Get("Location")); diff != "" {
				t.Errorf("Location (-want +got):\n%s", diff)
			}
		})
	}
}
