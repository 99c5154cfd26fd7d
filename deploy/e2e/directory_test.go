package e2e

import (
	"fmt"
	"net/http"
	"testing"
)

// TestFreshUserAssignableAtOnce: through the gateway, a user created a
// moment ago is a valid assignee at once in every context that checks
// assignees, whether or not their read models have consumed the
// user.created event yet (a miss asks identity), and an unknown id is
// still a 422 on assigned_to.
func TestFreshUserAssignableAtOnce(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	for i, tc := range []struct {
		path string
		body map[string]any
	}{
		{"/contacts", map[string]any{"first_name": "Fresh", "last_name": "Assignee"}},
		{"/leads", map[string]any{"first_name": "Fresh", "last_name": "Assignee"}},
		{"/deals", map[string]any{"title": "Fresh assignee deal"}},
	} {
		user := must(t, http.StatusCreated)(adm.Do("POST", "/users", map[string]any{
			"name": "New Hire", "email": fmt.Sprintf("new-hire-%d@e2e.test", i), "password": "correct horse battery", "role": "user",
		}))
		tc.body["assigned_to"] = user.ID()
		rec := must(t, http.StatusCreated)(adm.Do("POST", tc.path, tc.body))
		if got := rec.Data()["assigned_to"]; got != float64(user.ID()) {
			t.Errorf("%s: assigned_to = %v, want %d", tc.path, got, user.ID())
		}
		tc.body["assigned_to"] = user.ID() + 100_000
		r := must(t, http.StatusUnprocessableEntity)(adm.Do("POST", tc.path, tc.body))
		if r.JSON["code"] != "validation_failed" {
			t.Errorf("%s unknown assignee: %s", tc.path, r)
		}
	}
}
