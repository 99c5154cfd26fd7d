package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// TestEveryDeclaredRouteIsMounted: each public route dealsapi declares is
// served behind its policy: without a token 401 (an unmounted one would be
// 404 or 405), and an admin route refuses a user with 403.
func TestEveryDeclaredRouteIsMounted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, rt := range dealsapi.Routes {
		t.Run(rt.Pattern(), func(t *testing.T) {
			path := strings.TrimPrefix(rt.Location(1), route.Prefix)
			wantProblem(t, e.do(rt.Method, path, "", nil), http.StatusUnauthorized, "unauthenticated")
			if rt.Auth == route.Admin {
				wantProblem(t, e.do(rt.Method, path, e.user, nil), http.StatusForbidden, "forbidden")
			}
		})
	}
}

// TestCreatedLocation: every 201 names where the new record is read, the
// path of its GET route under /api.
func TestCreatedLocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	deal := e.createDeal(map[string]any{"title": "Located"})
	tests := []struct {
		name  string
		path  string
		token string
		body  map[string]any
		want  string // with the new id for %d, as the gateway used to set it
	}{
		{"stage", "/deal-stages", e.admin, map[string]any{"name": "Located"}, "/api/deal-stages/%d"},
		{"deal", "/deals", e.user, map[string]any{"title": "Located too"}, "/api/deals/%d"},
		{"quote", path("/deals/%d/quotes", deal.ID), e.user, map[string]any{"line_items": items([3]any{"Seat", 1, "1"})}, "/api/quotes/%d"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := e.do("POST", tc.path, tc.token, tc.body)
			var rec struct {
				Data struct {
					ID int64 `json:"id"`
				} `json:"data"`
			}
			if err := json.Unmarshal(r.Body, &rec); err != nil || r.Status != http.StatusCreated {
				t.Fatalf("POST %s: %d %s", tc.path, r.Status, r.Body)
			}
			if diff := cmp.Diff(path(tc.want, rec.Data.ID), r.Header.Get("Location")); diff != "" {
				t.Errorf("Location (-want +got):\n%s", diff)
			}
		})
	}
}
