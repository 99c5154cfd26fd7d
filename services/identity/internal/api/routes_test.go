package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// TestDeclaredRoutesMounted: every public route identityapi declares is
// served at its path behind its policy: without a credential a JWT or
// admin route is 401, a public one is neither unknown (404) nor of another
// method (405).
func TestDeclaredRoutesMounted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	for _, r := range identityapi.Routes {
		t.Run(r.Pattern(), func(t *testing.T) {
			t.Parallel()
			rec := e.do(req{method: r.Method, path: strings.ReplaceAll(r.Path, "{id}", "1")})
			switch r.Auth {
			case route.JWT, route.Admin:
				wantProblem(t, rec, http.StatusUnauthorized, "unauthenticated")
			default:
				if rec.Code == http.StatusNotFound || rec.Code == http.StatusMethodNotAllowed {
					t.Errorf("status %d: not mounted; body %s", rec.Code, rec.Body.String())
				}
			}
		})
	}
}

// TestCreatedLocation: every 201 carries the new record's URL under /api,
// as the gateway used to add it; keys and tokens, which have no GET of
// their own, are at the URL that revokes them.
func TestCreatedLocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	tests := []struct {
		name, path, body, want string
	}{
		{"user", "/users", mustJSON(map[string]string{"name": "Loc User", "email": uniqueEmail("loc"), "password": "loc-password-1"}), "/api/users/"},
		{"team", "/teams", `{"name":"Location team"}`, "/api/teams/"},
		{"api key", "/api-keys", `{"name":"location key"}`, "/api/api-keys/"},
		{"access token", "/access-tokens", `{"name":"location token","scopes":["contacts:read"]}`, "/api/access-tokens/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := e.do(req{method: http.MethodPost, path: tt.path, token: e.admin, body: tt.body})
			var out envelope[struct {
				ID int64 `json:"id"`
			}]
			decode(t, rec, http.StatusCreated, &out)
			if diff := cmp.Diff(tt.want+id(out.Data.ID), rec.Header().Get("Location")); diff != "" {
				t.Errorf("Location (-want +got):\n%s", diff)
			}
		})
	}
}
