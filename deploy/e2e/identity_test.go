package e2e

import (
	"net/http"
	"testing"
)

// TestFoundationDoneWhen walks the foundation's acceptance list: through the gateway an
// admin logs in, calls /auth/me, creates a user, a team and an API key, and
// that user gets 403 on /users.
func TestFoundationDoneWhen(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	me := must(t, http.StatusOK)(adm.Do("GET", "/auth/me", nil))
	if me.Data()["email"] != AdminEmail || me.Data()["role"] != "admin" {
		t.Fatalf("me = %s", me)
	}
	team := must(t, http.StatusCreated)(adm.Do("POST", "/teams", map[string]any{"name": "Sales EMEA"}))
	user := must(t, http.StatusCreated)(adm.Do("POST", "/users", map[string]any{
		"name": "Sam Seller", "email": "sam@e2e.test", "password": "correct horse battery", "role": "user", "team_id": team.ID(),
	}))
	key := must(t, http.StatusCreated)(adm.Do("POST", "/api-keys", map[string]any{"name": "website"}))
	if key.Data()["key"] == nil && key.Data()["secret"] == nil {
		t.Errorf("api key secret not returned once: %s", key)
	}
	tok, err := stack.Client().Login("sam@e2e.test", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	sam := stack.Client().With(tok)
	r := must(t, http.StatusForbidden)(sam.Do("GET", "/users", nil))
	if r.JSON["code"] != "forbidden" || r.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("403 body: %s", r)
	}
	must(t, http.StatusOK)(sam.Do("GET", "/auth/me", nil))
	_ = user
}

func TestBadTokensThroughGateway(t *testing.T) {
	t.Parallel()
	c := stack.Client()
	for name, tok := range map[string]string{
		"malformed": "abc.def.ghi",
		"alg none":  "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiIxIiwicm9sZSI6ImFkbWluIn0.",
	} {
		r := must(t, http.StatusUnauthorized)(c.With(tok).Do("GET", "/contacts", nil))
		if r.JSON["code"] != "unauthenticated" || r.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: %s", name, r)
		}
	}
	r := must(t, http.StatusNotFound)(c.Do("GET", "/internal/users", nil))
	if r.JSON["code"] != "not_found" {
		t.Errorf("internal route: %s", r)
	}
	for _, p := range []string{"/users", "/teams"} {
		r := must(t, http.StatusUnauthorized)(c.Do("GET", p, nil))
		if r.JSON["code"] != "unauthenticated" {
			t.Errorf("%s without token: %s", p, r)
		}
	}
}
