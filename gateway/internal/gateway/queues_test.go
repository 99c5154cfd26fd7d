package gateway

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/opencrm/crm/pkg/problem"
)

// TestQueuesUIIsAdminOnly: asynqmon answers admins only, with the same
// problems as every admin route.
func TestQueuesUIIsAdminOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	tests := []struct {
		name  string
		path  string
		token string
		want  problemBody
	}{
		{"no token", "/api/admin/queues", "", problemBody{Type: problem.TypeURI("unauthenticated"), Title: "Unauthorized",
			Status: 401, Detail: "missing bearer token", Code: "unauthenticated"}},
		{"no token, API", "/api/admin/queues/api/queues", "", problemBody{Type: problem.TypeURI("unauthenticated"), Title: "Unauthorized",
			Status: 401, Detail: "missing bearer token", Code: "unauthenticated"}},
		{"forged token", "/api/admin/queues/api/queues", "not.a.jwt", problemBody{Type: problem.TypeURI("unauthenticated"), Title: "Unauthorized",
			Status: 401, Detail: "invalid access token", Code: "unauthenticated"}},
		{"member", "/api/admin/queues/api/queues", e.iss.User(t, 7), problemBody{Type: problem.TypeURI("forbidden"), Title: "Forbidden",
			Status: 403, Detail: "this action requires the admin role", Code: "forbidden"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantProblemBody(t, e.do(req{path: tt.path, token: tt.token}), tt.want)
		})
	}
}

// TestQueuesUIServesItselfOnly: an admin gets the UI at its root path,
// its embedded assets and its API; the page references nothing outside
// the gateway and its policy forbids it.
func TestQueuesUIServesItselfOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	admin := e.iss.Admin(t, 1)

	page := e.do(req{path: "/api/admin/queues", token: admin})
	if page.status != http.StatusOK || !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") {
		t.Fatalf("page: %d %s", page.status, page.header.Get("Content-Type"))
	}
	if m := regexp.MustCompile(`(?:href|src)="(?:https?:)?//[^"]*"`).Find(page.body); m != nil {
		t.Errorf("page references %s outside the gateway", m)
	}
	csp := page.header.Get("Content-Security-Policy")
	if !strings.HasPrefix(csp, "default-src 'self'; script-src 'self' 'sha256-") || strings.Contains(csp, "http") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	// The page's template escapes slashes in its script (\/).
	if !strings.Contains(strings.ReplaceAll(string(page.body), `\/`, `/`), `window.FLAG_ROOT_PATH="/api/admin/queues"`) {
		t.Error("root path not set in the page")
	}
	scripts := regexp.MustCompile(`src="(/api/admin/queues/static/js/[^"]+)"`).FindAllSubmatch(page.body, -1)
	if len(scripts) == 0 {
		t.Fatal("page loads no script of its own")
	}
	for _, s := range scripts {
		if r := e.do(req{path: string(s[1]), token: admin}); r.status != http.StatusOK || len(r.body) == 0 {
			t.Errorf("%s: %d, %d bytes", s[1], r.status, len(r.body))
		}
	}

	api := e.do(req{path: "/api/admin/queues/api/queues", token: admin})
	var body struct {
		Queues []any `json:"queues"`
	}
	if api.status != http.StatusOK || json.Unmarshal(api.body, &body) != nil {
		t.Fatalf("queues API: %d %s", api.status, api.body)
	}
}
