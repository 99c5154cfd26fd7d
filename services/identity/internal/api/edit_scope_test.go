package api_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEditScope: admins set a user's edit scope on /users; company is the
// default, absent or null keeps it, and anything else is 422.
func TestEditScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	u := e.createUser("Scoped", uniqueEmail("scoped"), "scoped-password-1", "user", nil)
	if u.EditScope != "company" {
		t.Fatalf("default edit_scope = %q, want company", u.EditScope)
	}
	path := "/users/" + strconv.FormatInt(u.ID, 10)
	put := func(body map[string]any) *envelope[userOut] {
		body["name"], body["email"] = u.Name, u.Email
		var out envelope[userOut]
		decode(t, e.do(req{method: "PUT", path: path, token: e.admin, body: mustJSON(body)}), http.StatusOK, &out)
		return &out
	}
	var got []string
	for _, body := range []map[string]any{{"edit_scope": "team"}, {}, {"edit_scope": nil}, {"edit_scope": "own"}} {
		got = append(got, put(body).Data.EditScope)
	}
	if diff := cmp.Diff([]string{"team", "team", "team", "own"}, got); diff != "" {
		t.Errorf("edit_scope after each PUT (-want +got):\n%s", diff)
	}

	var created envelope[userOut]
	decode(t, e.do(req{method: "POST", path: "/users", token: e.admin, body: mustJSON(map[string]any{
		"name": "Own", "email": uniqueEmail("own"), "password": "own-password-12", "edit_scope": "own"})}), http.StatusCreated, &created)
	if created.Data.EditScope != "own" {
		t.Errorf("created edit_scope = %q, want own", created.Data.EditScope)
	}
	for name, r := range map[string]req{
		"create": {method: "POST", path: "/users", body: mustJSON(map[string]any{
			"name": "Bad", "email": uniqueEmail("bad"), "password": "bad-password-12", "edit_scope": "everyone"})},
		"update": {method: "PUT", path: path, body: mustJSON(map[string]any{"name": u.Name, "email": u.Email, "edit_scope": "all"})},
		"number": {method: "PUT", path: path, body: mustJSON(map[string]any{"name": u.Name, "email": u.Email, "edit_scope": 1})},
	} {
		t.Run(name, func(t *testing.T) {
			r.token = e.admin
			wantProblem(t, e.do(r), http.StatusUnprocessableEntity, "validation_failed", "edit_scope")
		})
	}
	// A user may not set their own scope.
	tok := e.login(u.Email, "scoped-password-1").AccessToken
	wantProblem(t, e.do(req{method: "PUT", path: path, token: tok, body: mustJSON(map[string]any{
		"name": u.Name, "email": u.Email, "edit_scope": "company"})}), http.StatusForbidden, "forbidden")
}
