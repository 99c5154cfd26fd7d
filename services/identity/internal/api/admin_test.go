package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

func id(n int64) string { return strconv.FormatInt(n, 10) }

func TestUsersCRUD(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	var team envelope[teamOut]
	decode(t, e.do(req{method: "POST", path: "/teams", token: e.admin, body: `{"name":"Sales"}`}), 201, &team)

	u := e.createUser("Bob Brown", uniqueEmail("bob"), "bob-password-1", "", &team.Data.ID)
	if u.Role != "user" || !u.Active || u.TeamID == nil || *u.TeamID != team.Data.ID || len(u.CreatedAt) != len("2026-01-02T03:04:05.000000Z") {
		t.Fatalf("created user %+v", u)
	}
	var got envelope[userOut]
	decode(t, e.do(req{method: "GET", path: "/users/" + id(u.ID), token: e.admin}), 200, &got)
	if diff := cmp.Diff(u, got.Data); diff != "" {
		t.Fatalf("get (-want +got):\n%s", diff)
	}

	// PUT: absent optional fields keep, null clears the team, a new password works.
	body := `{"name":"Robert Brown","email":"` + u.Email + `","team_id":null,"role":"admin","password":"new-password-22"}`
	var upd envelope[userOut]
	decode(t, e.do(req{method: "PUT", path: "/users/" + id(u.ID), token: e.admin, body: body}), 200, &upd)
	want := u
	want.Name, want.TeamID, want.Role = "Robert Brown", nil, "admin"
	if diff := cmp.Diff(want, upd.Data, cmpopts.IgnoreFields(userOut{}, "UpdatedAt")); diff != "" {
		t.Fatalf("update (-want +got):\n%s", diff)
	}
	e.login(u.Email, "new-password-22")
	wantProblem(t, e.do(req{method: "POST", path: "/auth/login",
		body: mustJSON(map[string]string{"email": u.Email, "password": "bob-password-1"})}), 401, "unauthenticated")

	// DELETE deactivates; the record stays readable.
	decode(t, e.do(req{method: "DELETE", path: "/users/" + id(u.ID), token: e.admin}), 200, nil)
	decode(t, e.do(req{method: "GET", path: "/users/" + id(u.ID), token: e.admin}), 200, &got)
	if got.Data.Active {
		t.Fatalf("user still active after DELETE: %+v", got.Data)
	}
}

func TestUsersList(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	for _, n := range []string{"Carla", "Dora", "Emil"} {
		e.createUser(n+" Zed", strings.ToLower(n)+"@list.example", "list-password-1", "user", nil)
	}
	type page struct {
		Success     bool      `json:"success"`
		Data        []userOut `json:"data"`
		CurrentPage int       `json:"current_page"`
		LastPage    int       `json:"last_page"`
		PerPage     int       `json:"per_page"`
		Total       int       `json:"total"`
	}
	names := func(p page) []string {
		var out []string
		for _, u := range p.Data {
			out = append(out, u.Name)
		}
		return out
	}
	tests := []struct {
		query string
		names []string
		total int
		last  int
	}{
		{"?search=zed&per_page=2", []string{"Carla Zed", "Dora Zed"}, 3, 2},
		{"?search=zed&per_page=2&page=2", []string{"Emil Zed"}, 3, 2},
		{"?search=LIST.EXAMPLE&sort_by=name&sort_dir=desc", []string{"Emil Zed", "Dora Zed", "Carla Zed"}, 3, 1},
		{"?role=admin", []string{"Administrator"}, 1, 1},
		{"?search=%25", nil, 0, 1},
		{"?page=9", nil, 4, 1},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			var p page
			decode(t, e.do(req{method: "GET", path: "/users" + tc.query, token: e.admin}), 200, &p)
			if diff := cmp.Diff(tc.names, names(p)); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
			if !p.Success || p.Total != tc.total || p.LastPage != tc.last || p.Data == nil {
				t.Errorf("envelope %+v, want total %d last %d", p, tc.total, tc.last)
			}
		})
	}
	for _, q := range []string{"?page=0", "?per_page=x", "?sort_by=password_hash", "?role=root", "?active=maybe", "?team_id=-1"} {
		t.Run("bad "+q, func(t *testing.T) {
			field := strings.SplitN(q[1:], "=", 2)[0]
			wantProblem(t, e.do(req{method: "GET", path: "/users" + q, token: e.admin}), 422, "validation_failed", field)
		})
	}
}

// TestUsersBadInput keeps what HTTP adds to the input rules (tested on the
// service, identity's rules_test.go): decoding, storage conflicts,
// authorization, and how one broken rule is rendered.
func TestUsersBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	taken := e.createUser("Taken", uniqueEmail("taken"), "taken-password-1", "user", nil)
	s := e.login(taken.Email, "taken-password-1")
	ok := map[string]any{"name": "New", "email": uniqueEmail("new"), "password": "new-password-1"}
	with := func(k string, v any) string {
		m := map[string]any{}
		for kk, vv := range ok {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return mustJSON(m)
	}
	tests := []struct {
		name   string
		r      req
		status int
		code   string
		fields []string
	}{
		{"weak password", req{body: with("password", "short-pw")}, 422, "validation_failed", []string{"password"}},
		{"unknown team", req{body: with("team_id", 999999)}, 422, "validation_failed", []string{"team_id"}},
		{"team wrong type", req{body: with("team_id", "x")}, 422, "validation_failed", []string{"team_id"}},
		{"duplicate email", req{body: with("email", strings.ToUpper(taken.Email))}, 409, "conflict", nil},
		{"malformed json", req{body: `{"name":`}, 400, "malformed_json", nil},
		{"wrong content type", req{body: `name=x`, contentType: "text/plain"}, 415, "unsupported_media_type", nil},
		{"no token", req{body: with("name", "X"), token: "-"}, 401, "unauthenticated", nil},
		{"not admin", req{body: with("name", "X"), token: s.AccessToken}, 403, "forbidden", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.method, tc.r.path = "POST", "/users"
			switch tc.r.token {
			case "":
				tc.r.token = e.admin
			case "-":
				tc.r.token = ""
			}
			wantProblem(t, e.do(tc.r), tc.status, tc.code, tc.fields...)
		})
	}

	putTests := []struct {
		name   string
		path   string
		body   string
		status int
		code   string
		fields []string
	}{
		{"unknown user", "/users/999999", `{"name":"X","email":"x@example.com"}`, 404, "not_found", nil},
		{"non-numeric id", "/users/abc", `{"name":"X","email":"x@example.com"}`, 404, "not_found", nil},
		{"required fields", "/users/" + id(taken.ID), `{}`, 422, "validation_failed", []string{"name", "email"}},
		{"email taken", "/users/" + id(taken.ID), `{"name":"X","email":"` + adminEmail + `"}`, 409, "conflict", nil},
		{"last admin demoted", "/users/" + id(e.adminID), `{"name":"A","email":"` + adminEmail + `","role":"user"}`, 409, "conflict", nil},
	}
	for _, tc := range putTests {
		t.Run("PUT "+tc.name, func(t *testing.T) {
			wantProblem(t, e.do(req{method: "PUT", path: tc.path, token: e.admin, body: tc.body}), tc.status, tc.code, tc.fields...)
		})
	}
	wantProblem(t, e.do(req{method: "DELETE", path: "/users/" + id(e.adminID), token: e.admin}), 409, "conflict")
	wantProblem(t, e.do(req{method: "DELETE", path: "/users/999999", token: e.admin}), 404, "not_found")
	for _, path := range []string{"/users", "/users/" + id(taken.ID), "/teams", "/api-keys"} {
		wantProblem(t, e.do(req{method: "GET", path: path, token: s.AccessToken}), 403, "forbidden")
	}
}

type teamOut struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func TestTeams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	var a, b envelope[teamOut]
	decode(t, e.do(req{method: "POST", path: "/teams", token: e.admin, body: `{"name":"  Beta "}`}), 201, &b)
	decode(t, e.do(req{method: "POST", path: "/teams", token: e.admin, body: `{"name":"Alpha"}`}), 201, &a)
	if b.Data.Name != "Beta" {
		t.Fatalf("name not trimmed: %q", b.Data.Name)
	}
	var list envelope[[]teamOut]
	decode(t, e.do(req{method: "GET", path: "/teams", token: e.admin}), 200, &list)
	if diff := cmp.Diff([]teamOut{a.Data, b.Data}, list.Data); diff != "" {
		t.Fatalf("list (-want +got):\n%s", diff)
	}
	var upd envelope[teamOut]
	decode(t, e.do(req{method: "PUT", path: "/teams/" + id(a.Data.ID), token: e.admin, body: `{"name":"Alpha Two"}`}), 200, &upd)
	decode(t, e.do(req{method: "GET", path: "/teams/" + id(a.Data.ID), token: e.admin}), 200, &upd)
	if upd.Data.Name != "Alpha Two" {
		t.Fatalf("rename not stored: %+v", upd.Data)
	}

	member := e.createUser("Member", uniqueEmail("member"), "member-password-1", "user", &a.Data.ID)
	decode(t, e.do(req{method: "DELETE", path: "/teams/" + id(a.Data.ID), token: e.admin}), 200, nil)
	var got envelope[userOut]
	decode(t, e.do(req{method: "GET", path: "/users/" + id(member.ID), token: e.admin}), 200, &got)
	if got.Data.TeamID != nil {
		t.Fatalf("member still in deleted team: %+v", got.Data)
	}

	bad := []struct {
		name, method, path, body string
		status                   int
		code                     string
		fields                   []string
	}{
		{"duplicate name", "POST", "/teams", `{"name":"beta"}`, 409, "conflict", nil},
		{"rename to taken", "PUT", "/teams/" + id(b.Data.ID), `{"name":"BETA"}`, 200, "", nil},
		{"blank name", "POST", "/teams", `{"name":"  "}`, 422, "validation_failed", []string{"name"}},
		{"malformed", "POST", "/teams", `{`, 400, "malformed_json", nil},
		{"content type", "POST", "/teams", `name=x`, 415, "unsupported_media_type", nil},
		{"unknown get", "GET", "/teams/999999", "", 404, "not_found", nil},
		{"unknown put", "PUT", "/teams/999999", `{"name":"Z"}`, 404, "not_found", nil},
		{"unknown delete", "DELETE", "/teams/" + id(a.Data.ID), "", 404, "not_found", nil},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			r := req{method: tc.method, path: tc.path, token: e.admin, body: tc.body}
			if tc.code == "unsupported_media_type" {
				r.contentType = "text/plain"
			}
			rec := e.do(r)
			if tc.code == "" {
				decode(t, rec, tc.status, nil) // renaming a team to its own name in another case is fine
				return
			}
			wantProblem(t, rec, tc.status, tc.code, tc.fields...)
		})
	}
	// Renaming one team to another's name conflicts.
	var c envelope[teamOut]
	decode(t, e.do(req{method: "POST", path: "/teams", token: e.admin, body: `{"name":"Gamma"}`}), 201, &c)
	wantProblem(t, e.do(req{method: "PUT", path: "/teams/" + id(c.Data.ID), token: e.admin, body: `{"name":"beta"}`}), 409, "conflict")
}

type keyOut struct {
	ID                 int64    `json:"id"`
	Name               string   `json:"name"`
	Prefix             string   `json:"prefix"`
	RateLimitPerMinute int      `json:"rate_limit_per_minute"`
	AllowedOrigins     []string `json:"allowed_origins"`
	RevokedAt          *string  `json:"revoked_at"`
	Key                string   `json:"key"`
}

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	var created envelope[keyOut]
	decode(t, e.do(req{method: "POST", path: "/api-keys", token: e.admin,
		body: `{"name":"Website","allowed_origins":["https://Example.com/"]}`}), 201, &created)
	k := created.Data
	if !strings.HasPrefix(k.Key, identity.APIKeyPrefix) || len(k.Key) != len(identity.APIKeyPrefix)+43 ||
		k.Prefix != k.Key[:12] || k.RateLimitPerMinute != 60 {
		t.Fatalf("created key %+v", k)
	}
	if diff := cmp.Diff([]string{"https://example.com"}, k.AllowedOrigins); diff != "" {
		t.Fatalf("origins (-want +got):\n%s", diff)
	}

	// The secret is never listed nor stored in clear.
	rec := e.do(req{method: "GET", path: "/api-keys", token: e.admin})
	decode(t, rec, 200, nil)
	if strings.Contains(rec.Body.String(), k.Key) || strings.Contains(rec.Body.String(), `"key"`) {
		t.Fatalf("listing leaks the secret: %s", rec.Body.String())
	}
	var stored int
	if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM api_keys WHERE prefix = $1 AND key_hash = sha256($2::bytea)`,
		k.Prefix, []byte(k.Key)).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("stored hash rows = %d, %v", stored, err)
	}

	verify := func(key, secret string) *httptest.ResponseRecorder {
		return e.do(req{method: "POST", path: identityapi.PathVerifyKey, body: mustJSON(map[string]string{"key": key}),
			header: map[string]string{"X-Internal-Token": secret}})
	}
	var v envelope[map[string]any]
	r := verify(k.Key, internalSecret)
	decode(t, r, 200, &v)
	wantData := map[string]any{"id": float64(k.ID), "name": "Website", "prefix": k.Prefix,
		"rate_limit_per_minute": float64(60), "allowed_origins": []any{"https://example.com"}}
	if diff := cmp.Diff(wantData, v.Data); diff != "" {
		t.Fatalf("verify data (-want +got):\n%s", diff)
	}
	wantProblem(t, verify(k.Key, "wrong-secret-wrong-secret"), 401, "unauthenticated")
	wantProblem(t, verify(k.Key+"x", internalSecret), 401, "unauthenticated")
	wantProblem(t, verify("not-a-key", internalSecret), 401, "unauthenticated")
	wantProblem(t, verify("", internalSecret), 422, "validation_failed", "key")

	decode(t, e.do(req{method: "DELETE", path: "/api-keys/" + id(k.ID), token: e.admin}), 200, nil)
	wantProblem(t, verify(k.Key, internalSecret), 401, "unauthenticated")
	var list envelope[[]keyOut]
	decode(t, e.do(req{method: "GET", path: "/api-keys", token: e.admin}), 200, &list)
	if len(list.Data) != 1 || list.Data[0].RevokedAt == nil {
		t.Fatalf("revoked key not shown as revoked: %+v", list.Data)
	}
	wantProblem(t, e.do(req{method: "DELETE", path: "/api-keys/999999", token: e.admin}), 404, "not_found")

	bad := []struct {
		name, body string
		status     int
		code       string
		fields     []string
	}{
		{"rate limit not int", `{"name":"a","rate_limit_per_minute":"x"}`, 422, "validation_failed", []string{"rate_limit_per_minute"}},
		{"origins not array", `{"name":"a","allowed_origins":"https://a.example"}`, 422, "validation_failed", []string{"allowed_origins"}},
		{"malformed", `{"name"`, 400, "malformed_json", nil},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, e.do(req{method: "POST", path: "/api-keys", token: e.admin, body: tc.body}), tc.status, tc.code, tc.fields...)
		})
	}
	var custom envelope[keyOut]
	decode(t, e.do(req{method: "POST", path: "/api-keys", token: e.admin, body: `{"name":"Partner","rate_limit_per_minute":100000}`}), 201, &custom)
	if custom.Data.RateLimitPerMinute != 100000 || custom.Data.AllowedOrigins == nil {
		t.Fatalf("custom key %+v", custom.Data)
	}
}

func TestInternalUsers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	u := e.createUser("Dir", uniqueEmail("dir"), "dir-password-1", "user", nil)
	rec := e.do(req{method: "GET", path: identityapi.PathUsers, header: map[string]string{"X-Internal-Token": internalSecret}})
	var body struct {
		Data []directory.User `json:"data"`
	}
	decode(t, rec, 200, &body)
	var emails []string
	for _, du := range body.Data {
		emails = append(emails, du.Email)
	}
	if diff := cmp.Diff([]string{adminEmail, u.Email}, emails); diff != "" {
		t.Fatalf("snapshot (-want +got):\n%s", diff)
	}
	wantProblem(t, e.do(req{method: "GET", path: identityapi.PathUsers}), 401, "unauthenticated")
	// A user token is not an internal credential.
	wantProblem(t, e.do(req{method: "GET", path: identityapi.PathUsers, token: e.admin}), 401, "unauthenticated")
}

func TestOutboxEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	var team envelope[teamOut]
	decode(t, e.do(req{method: "POST", path: "/teams", token: e.admin, body: `{"name":"Ops"}`}), 201, &team)
	decode(t, e.do(req{method: "PUT", path: "/teams/" + id(team.Data.ID), token: e.admin, body: `{"name":"Ops 2"}`}), 200, nil)
	u := e.createUser("Evt", uniqueEmail("evt"), "evt-password-1", "user", &team.Data.ID)
	decode(t, e.do(req{method: "DELETE", path: "/teams/" + id(team.Data.ID), token: e.admin}), 200, nil)
	decode(t, e.do(req{method: "DELETE", path: "/users/" + id(u.ID), token: e.admin}), 200, nil)
	// A failed write records nothing.
	wantProblem(t, e.do(req{method: "POST", path: "/users", token: e.admin,
		body: mustJSON(map[string]any{"name": "Dup", "email": u.Email, "password": "dup-password-1"})}), 409, "conflict")

	rows, err := e.db.Query(context.Background(), `SELECT stream, type, aggregate_id, payload FROM outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	type ev struct{ Stream, Type, Agg, Summary string }
	var got []ev
	for rows.Next() {
		var x ev
		var payload []byte
		if err := rows.Scan(&x.Stream, &x.Type, &x.Agg, &payload); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(x.Type, "user.") {
			var du directory.User
			if err := json.Unmarshal(payload, &du); err != nil {
				t.Fatal(err)
			}
			x.Summary = fmt.Sprintf("%s active=%v team=%v", du.Email, du.Active, du.TeamID != nil)
		} else {
			var te directory.TeamEvent
			if err := json.Unmarshal(payload, &te); err != nil {
				t.Fatal(err)
			}
			x.Summary = te.Name
		}
		got = append(got, x)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	s, tid, uid := directory.Stream, id(team.Data.ID), id(u.ID)
	want := []ev{
		{s, directory.UserCreated, id(e.adminID), adminEmail + " active=true team=false"},
		{s, directory.TeamCreated, tid, "Ops"},
		{s, directory.TeamUpdated, tid, "Ops 2"},
		{s, directory.UserCreated, uid, u.Email + " active=true team=true"},
		{s, directory.UserUpdated, uid, u.Email + " active=true team=false"},
		{s, directory.TeamDeleted, tid, "Ops 2"},
		{s, directory.UserUpdated, uid, u.Email + " active=false team=false"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("outbox (-want +got):\n%s", diff)
	}
}

func TestBootstrapAdminRace(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	svc, _ := build(t, d, options{})
	results := make([]bool, 4)
	concurrently(len(results), func(i int) {
		_, created, err := svc.BootstrapAdmin(context.Background(), fmt.Sprintf("boot%d@example.com", i), "boot-password-1")
		if err != nil {
			t.Error(err)
		}
		results[i] = created
	})
	n := 0
	for _, c := range results {
		if c {
			n++
		}
	}
	var users int
	if err := d.QueryRow(context.Background(), `SELECT count(*) FROM users WHERE role = 'admin'`).Scan(&users); err != nil {
		t.Fatal(err)
	}
	if n != 1 || users != 1 {
		t.Fatalf("created %d times, %d admins; want exactly one", n, users)
	}
	// Once a user exists, bootstrap does nothing.
	if _, created, err := svc.BootstrapAdmin(context.Background(), "later@example.com", "boot-password-1"); err != nil || created {
		t.Fatalf("second bootstrap created=%v err=%v", created, err)
	}
}

func TestUnknownRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	wantProblem(t, e.do(req{method: "GET", path: "/nope", token: e.admin}), 404, "not_found")
	// A known path with another method is 405 with Allow (httpx.Routes).
	rec := e.do(req{method: "PATCH", path: "/auth/login"})
	wantProblem(t, rec, 405, "method_not_allowed")
	if got := rec.Header().Get("Allow"); got != "POST" {
		t.Errorf("Allow = %q, want POST", got)
	}
}

// TestAdminRoutesFollowTheStoredAccount: an admin's access token stays
// valid for its lifetime, but identity's admin routes read the account, so
// a deactivated or demoted admin cannot create users or API keys with it.
func TestAdminRoutesFollowTheStoredAccount(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	newUser := func(tag string) string {
		return mustJSON(map[string]string{"name": "X " + tag, "email": uniqueEmail(tag), "password": "x-password-123", "role": "admin"})
	}
	tests := []struct {
		name   string
		change func(u userOut)
		status int
		code   string
	}{
		{"deactivated", func(u userOut) {
			decode(t, e.do(req{method: "DELETE", path: "/users/" + id(u.ID), token: e.admin}), 200, nil)
		}, 401, "unauthenticated"},
		{"demoted", func(u userOut) {
			body := mustJSON(map[string]any{"name": u.Name, "email": u.Email, "role": "user"})
			decode(t, e.do(req{method: "PUT", path: "/users/" + id(u.ID), token: e.admin, body: body}), 200, nil)
		}, 403, "forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			email := uniqueEmail("adm-" + tt.name)
			u := e.createUser("Admin "+tt.name, email, "admin-password-9", "admin", nil)
			tok := e.login(email, "admin-password-9").AccessToken
			decode(t, e.do(req{method: "POST", path: "/users", token: tok, body: newUser(tt.name + "-before")}), 201, nil)

			tt.change(u)
			for _, r := range []req{
				{method: "POST", path: "/users", token: tok, body: newUser(tt.name + "-after")},
				{method: "POST", path: "/api-keys", token: tok, body: `{"name":"k"}`},
				{method: "GET", path: "/users", token: tok},
			} {
				wantProblem(t, e.do(r), tt.status, tt.code)
			}
		})
	}
}
