package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/mailapi"
)

// TestDeclaredRoutesMounted: every public route mailapi declares is served
// at its path behind the JWT guard, so without a token each is a 401 (not
// an unknown path's 404 or another method's 405).
func TestDeclaredRoutesMounted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noSecret: true})
	for _, r := range mailapi.Routes {
		t.Run(r.Pattern(), func(t *testing.T) {
			t.Parallel()
			wantProblem(t, e.do(r.Method, strings.ReplaceAll(r.Path, "{id}", "1"), "", nil), 401, "unauthenticated")
		})
	}
}

// TestCreatedLocation: a 201 carries the new record's URL under /api, as
// the gateway used to add it; a repeated message_id (200) carries none.
func TestCreatedLocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	tok := e.user(5)
	tests := []struct {
		name, path string
		body       map[string]any
		status     int
		want       string // the Location before the new id; "" for none
	}{
		{name: "email", path: "/emails", body: map[string]any{"message_id": "loc-1@example.com", "from": "a@x.example"},
			status: http.StatusCreated, want: "/api/emails/"},
		{name: "repeated email", path: "/emails", body: map[string]any{"message_id": "<loc-1@example.com>", "from": "a@x.example"},
			status: http.StatusOK},
		{name: "mailbox", path: "/mailboxes", body: map[string]any{"host": "imap.example.com", "username": "u", "password": "p"},
			status: http.StatusCreated, want: "/api/mailboxes/"},
	}
	for _, tt := range tests {
		// In order: the repeat needs the first email stored.
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(http.MethodPost, tt.path, tok, tt.body)
			if r.status != tt.status {
				t.Fatalf("status = %d, want %d; body %s", r.status, tt.status, r.body)
			}
			var out struct {
				ID int64 `json:"id"`
			}
			r.data(t, &out)
			want := ""
			if tt.want != "" {
				want = tt.want + strconv.FormatInt(out.ID, 10)
			}
			if diff := cmp.Diff(want, r.header.Get("Location")); diff != "" {
				t.Errorf("Location (-want +got):\n%s", diff)
			}
		})
	}
}
