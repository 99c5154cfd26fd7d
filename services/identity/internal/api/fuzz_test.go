package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/fuzzcheck"
)

// fuzzWrite is one write endpoint taking a JSON body.
type fuzzWrite struct {
	method, path string
	// token is the bearer token sent; "" sends none.
	token string
	// internal sends the internal secret (the /internal routes).
	internal bool
	// valid is a body the endpoint accepts, whose fields the fuzzer
	// replaces one at a time (see spliceField).
	valid map[string]any
	// unique names a field whose value must not repeat, and its format
	// (see withUnique).
	unique, format string
	// refusalWrites names the tables a refusal may still change: a
	// refresh token used twice is a 401 that revokes its whole family,
	// which is the point of reuse detection, and the audit log records
	// that revocation and every refused login.
	refusalWrites []string
}

// FuzzWriteBodies sends arbitrary JSON bodies to every identity endpoint
// that takes one (login, refresh, logout, users, teams, API keys, access
// tokens, the internal verifications): raw bytes when splice is even,
// else a valid body with field splice/2 set to the fuzzed value.
// Whatever the body: no panic, no 5xx, every 4xx is problem+json with a
// documented code for its status, and a 4xx changes no row.
func FuzzWriteBodies(f *testing.F) {
	e := newEnv(f, options{})
	team := createTeamForFuzz(f, e)
	targetEmail := uniqueEmail("target")
	target := e.createUser("Fuzz Target", targetEmail, "target-password-1", "user", nil)
	refresh := e.login(adminEmail, adminPassword).RefreshToken
	spent := e.login(adminEmail, adminPassword).RefreshToken
	if rec := e.refresh(spent); rec.Code != http.StatusOK {
		f.Fatalf("refresh: %d %s", rec.Code, rec.Body)
	}
	writes := []fuzzWrite{
		{method: http.MethodPost, path: "/auth/login", valid: map[string]any{"email": targetEmail, "password": "target-password-1"},
			refusalWrites: []string{"audit_log", "audit_head"}},
		{method: http.MethodPost, path: "/auth/refresh", valid: map[string]any{"refresh_token": refresh},
			refusalWrites: []string{"refresh_tokens", "audit_log", "audit_head"}},
		{method: http.MethodPost, path: "/auth/logout", valid: map[string]any{"refresh_token": spent}},
		{method: http.MethodPost, path: "/users", token: e.admin, valid: map[string]any{"name": "Grace",
			"email": "grace@example.com", "password": "long-enough-1", "role": "user", "team_id": team, "edit_scope": "team"},
			unique: "email", format: "fuzz-%d@example.com"},
		{method: http.MethodPut, path: fmt.Sprintf("/users/%d", target.ID), token: e.admin, valid: map[string]any{"name": "Target",
			"email": targetEmail, "password": "target-password-1", "role": "user", "team_id": team, "active": true, "edit_scope": "own"}},
		{method: http.MethodPost, path: "/teams", token: e.admin, valid: map[string]any{"name": "Sales"},
			unique: "name", format: "Team %d"},
		{method: http.MethodPut, path: fmt.Sprintf("/teams/%d", team), token: e.admin, valid: map[string]any{"name": "Fuzzers"}},
		{method: http.MethodPost, path: "/api-keys", token: e.admin, valid: map[string]any{"name": "Site",
			"rate_limit_per_minute": 60, "allowed_origins": []string{"https://example.com"}}},
		{method: http.MethodPost, path: "/access-tokens", token: e.admin, valid: map[string]any{"name": "Sync",
			"scopes": []string{"contacts:read"}, "role": "user", "expires_at": "2099-01-01T00:00:00Z"}},
		{method: http.MethodPost, path: identityapi.PathVerifyKey, internal: true,
			valid: map[string]any{"key": "crm_live_0000000000000000000000000000000000000000"}},
		{method: http.MethodPost, path: identityapi.PathVerifyAccessToken, internal: true,
			valid: map[string]any{"token": "crm_pat_00000000000000000000000000000000"}},
	}
	seeds := []string{
		mustJSON(map[string]string{"email": adminEmail, "password": adminPassword}),
		mustJSON(map[string]string{"refresh_token": spent}),
		mustJSON(map[string]string{"refresh_token": refresh}),
		`{"name":"Grace","email":"grace@example.com","password":"long-enough-1","role":"user","team_id":1,"edit_scope":"team"}`,
		`{"name":"Renamed","email":"renamed@example.com","password":null,"role":"","team_id":null,"active":true,"edit_scope":"own"}`,
		`{"name":"Sales"}`,
		`{"name":" Ops ","name":"Support"}`,
		`{"name":"Site","rate_limit_per_minute":100000,"allowed_origins":["https://example.com","HTTP://EXAMPLE.ORG:8080/"]}`,
		`{"name":"Sync","scopes":["contacts:read","admin"],"role":"admin","expires_at":"2099-01-01T00:00:00Z"}`,
		`{"key":"crm_live_0000000000000000000000000000000000000000"}`,
		`{"token":"crm_pat_00000000000000000000000000000000"}`,
		`{"name":"x","team_id":9223372036854775807,"rate_limit_per_minute":1e400}`,
		`{"name":"x","team_id":-1,"active":null,"expires_at":"0000-01-01T00:00:00Z"}`,
		`{"name":"\u0000","email":"a\u0000@example.com","password":"\ud800\ud800\ud800\ud800\ud800"}`,
		"{\"name\":\"\xff\xfe\",\"email\":\"\xc0@example.com\"}",
		`{"name":["x"],"email":{"a":1},"scopes":"contacts:read","allowed_origins":[null]}`,
		`{"name":"x"} {"name":"y"}`,
		`{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{}]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
		`null`, `[]`, `"x"`, `{`, ``,
	}
	for i, s := range seeds {
		f.Add(uint8(i), uint8(0), []byte(s))
	}
	for i, v := range []string{`9223372036854775807`, `-1`, `null`, `"\u0000"`, `""`, `1e400`, `["admin"]`,
		`"HTTP://[::1]:0/"`, `"9999-12-31T23:59:59+23:59"`, `{"a":1}`, "\xff"} {
		f.Add(uint8(i), uint8(2*i+1), []byte(v))
	}
	for _, s := range []struct {
		which      int
		field, raw string
	}{
		{0, "email", `"` + adminEmail + `"`}, {0, "password", `"` + strings.Repeat("p", 5000) + `"`},
		{3, "team_id", `9223372036854775807`}, {3, "email", `"` + strings.Repeat("a", 300) + `@example.com"`},
		{3, "password", `"` + strings.Repeat("é", 40) + `"`}, {3, "edit_scope", `"Team"`},
		{4, "email", `"` + adminEmail + `"`}, {4, "team_id", `0`}, {4, "active", `"false"`}, {4, "role", `"owner"`},
		{7, "rate_limit_per_minute", `2147483648`}, {7, "allowed_origins", `["http://a:99999","https://b.example/path"]`},
		{7, "allowed_origins", `[` + strings.Repeat(`"https://a.example",`, 50) + `"https://b.example"]`},
		{8, "expires_at", `"2000-01-01T00:00:00Z"`}, {8, "expires_at", `"9999-12-31T23:59:59-23:59"`},
		{8, "scopes", `["admin"]`}, {8, "scopes", `["contacts:read","contacts:read"]`}, {8, "role", `null`},
	} {
		f.Add(uint8(s.which), fuzzcheck.FieldSeed(writes[s.which].valid, s.field), []byte(s.raw))
	}
	n := 0 // inputs so far in this process
	f.Fuzz(func(t *testing.T, which, splice uint8, body []byte) {
		w := writes[int(which)%len(writes)]
		if n++; splice%2 == 1 {
			valid := w.valid
			if w.unique != "" {
				valid = fuzzcheck.WithUnique(valid, w.unique, w.format, n)
			}
			body = fuzzcheck.Splice(valid, fuzzcheck.Fields(w.valid), splice/2, body)
		}
		req := httptest.NewRequest(w.method, w.path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = testIP + ":4711"
		if w.token != "" {
			req.Header.Set("Authorization", "Bearer "+w.token)
		}
		if w.internal {
			req.Header.Set("X-Internal-Token", internalSecret)
		}
		before := fuzzcheck.Snapshot(t, e.db)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		what := fmt.Sprintf("%s %s with %q", w.method, w.path, body)
		t.Logf("%s: %d", what, rec.Code)
		fuzzcheck.Answer(t, what, rec.Code, rec.Header(), rec.Body.Bytes())
		if rec.Code >= 400 {
			after := fuzzcheck.Snapshot(t, e.db)
			for _, table := range w.refusalWrites {
				delete(before, table)
				delete(after, table)
			}
			if diff := cmp.Diff(before, after); diff != "" {
				t.Fatalf("%s: %d changed rows (-before +after):\n%s", what, rec.Code, diff)
			}
		}
	})
}

func createTeamForFuzz(f *testing.F, e *env) int64 {
	rec := e.do(req{method: http.MethodPost, path: "/teams", token: e.admin, body: `{"name":"Fuzzers"}`})
	var out envelope[teamOut]
	decode(f, rec, http.StatusCreated, &out)
	return out.Data.ID
}
