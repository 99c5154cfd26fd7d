package api_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/identityapi"
)

type accessTokenOut struct {
	ID         int64    `json:"id"`
	Name       string   `json:"name"`
	Prefix     string   `json:"prefix"`
	Scopes     []string `json:"scopes"`
	Role       string   `json:"role"`
	UserID     int64    `json:"user_id"`
	CreatedBy  *int64   `json:"created_by"`
	ExpiresAt  *string  `json:"expires_at"`
	LastUsedAt *string  `json:"last_used_at"`
	RevokedAt  *string  `json:"revoked_at"`
	Token      string   `json:"token"`
}

type verifiedOut struct {
	ID          int64    `json:"id"`
	UserID      int64    `json:"user_id"`
	Role        string   `json:"role"`
	Scopes      []string `json:"scopes"`
	AccessToken string   `json:"access_token"`
	ExpiresIn   int      `json:"expires_in"`
}

func (e *env) verifyToken(token string) *httptest.ResponseRecorder {
	e.t.Helper()
	return e.do(req{method: "POST", path: identityapi.PathVerifyAccessToken, body: mustJSON(map[string]string{"token": token}),
		header: map[string]string{"X-Internal-Token": internalSecret}})
}

func (e *env) createToken(body string) accessTokenOut {
	e.t.Helper()
	var out envelope[accessTokenOut]
	decode(e.t, e.do(req{method: "POST", path: "/access-tokens", token: e.admin, body: body}), 201, &out)
	return out.Data
}

func TestAccessTokenLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	tok := e.createToken(`{"name":"billing sync","scopes":["deals:write","contacts:read","contacts:read"]}`)
	if len(tok.Token) < 40 || tok.Token[:8] != "crm_pat_" || tok.Prefix != tok.Token[:16] || tok.Role != "user" ||
		tok.UserID <= 0 || tok.CreatedBy == nil || *tok.CreatedBy != e.adminID {
		t.Fatalf("created token %+v", tok)
	}
	if diff := cmp.Diff([]string{"contacts:read", "deals:write"}, tok.Scopes); diff != "" {
		t.Fatalf("scopes (-want +got):\n%s", diff)
	}

	// Verification mints an access token for the service user with the scopes.
	var v envelope[verifiedOut]
	decode(t, e.verifyToken(tok.Token), 200, &v)
	if v.Data.UserID != tok.UserID || v.Data.ExpiresIn < 1 || v.Data.ExpiresIn > 60 {
		t.Fatalf("verified %+v", v.Data)
	}
	claims, err := e.verifier().Verify(context.Background(), v.Data.AccessToken)
	if err != nil {
		t.Fatalf("minted token does not verify: %v", err)
	}
	if diff := cmp.Diff([]string{"contacts:read", "deals:write"}, claims.Scopes); diff != "" || claims.UserID() != tok.UserID || claims.Name != "billing sync" {
		t.Fatalf("minted claims %+v (scopes diff %s)", claims, diff)
	}
	// The service user answers /auth/me with the minted token, but never logs in.
	decode(t, e.do(req{method: "GET", path: "/auth/me", token: v.Data.AccessToken}), 200, nil)

	// The list shows the token without its secret, last_used_at set once.
	var list envelope[[]accessTokenOut]
	decode(t, e.do(req{method: "GET", path: "/access-tokens", token: e.admin}), 200, &list)
	if len(list.Data) != 1 || list.Data[0].Token != "" || list.Data[0].LastUsedAt == nil {
		t.Fatalf("list %+v", list.Data)
	}
	first := *list.Data[0].LastUsedAt
	decode(t, e.verifyToken(tok.Token), 200, nil)
	decode(t, e.do(req{method: "GET", path: "/access-tokens", token: e.admin}), 200, &list)
	if got := *list.Data[0].LastUsedAt; got != first {
		t.Fatalf("last_used_at rewritten within a minute: %s then %s", first, got)
	}
	// Service users are not people: not in /users, and not editable there.
	var users struct {
		Total int `json:"total"`
	}
	decode(t, e.do(req{method: "GET", path: "/users", token: e.admin}), 200, &users)
	if users.Total != 1 {
		t.Fatalf("/users total = %d, want only the admin", users.Total)
	}
	wantProblem(t, e.do(req{method: "PUT", path: "/users/" + id(tok.UserID), token: e.admin,
		body: `{"name":"x","email":"x@example.com","password":"some-password-1"}`}), 404, "not_found")

	// Revocation: verification fails at once.
	decode(t, e.do(req{method: "DELETE", path: "/access-tokens/" + id(tok.ID), token: e.admin}), 200, nil)
	wantProblem(t, e.verifyToken(tok.Token), 401, "unauthenticated")
	wantProblem(t, e.do(req{method: "DELETE", path: "/access-tokens/999999", token: e.admin}), 404, "not_found")
}

// TestAccessTokenBadInput keeps how a broken rule and a refused caller are
// rendered; the rules themselves are tested on the service.
func TestAccessTokenBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	user := e.createUser("Ulla User", uniqueEmail("ulla"), "ulla-password-1", "user", nil)
	userToken := e.login(user.Email, "ulla-password-1").AccessToken
	tests := []struct {
		name, token, body string
		status            int
		code              string
		fields            []string
	}{
		{"unknown scope", e.admin, `{"name":"t","scopes":["contacts:delete"]}`, 422, "validation_failed", []string{"scopes"}},
		{"non-admin", userToken, `{"name":"t","scopes":["leads:read"]}`, 403, "forbidden", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, e.do(req{method: "POST", path: "/access-tokens", token: tc.token, body: tc.body}), tc.status, tc.code, tc.fields...)
		})
	}
	wantProblem(t, e.do(req{method: "GET", path: "/access-tokens", token: userToken}), 403, "forbidden")
}

func TestAccessTokenVerifyRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	soon := e.createToken(`{"name":"short","scopes":["leads:read"],"expires_at":"` +
		time.Now().Add(1500*time.Millisecond).UTC().Format(time.RFC3339Nano) + `"}`)
	decode(t, e.verifyToken(soon.Token), 200, nil)

	// A token minting tokens needs the admin scope, whatever its role.
	adminNoScope := e.createToken(`{"name":"admin reader","role":"admin","scopes":["contacts:read"]}`)
	adminScoped := e.createToken(`{"name":"provisioner","role":"admin","scopes":["admin"]}`)
	mint := func(secret string) string {
		var v envelope[verifiedOut]
		decode(t, e.verifyToken(secret), 200, &v)
		return v.Data.AccessToken
	}
	wantProblem(t, e.do(req{method: "POST", path: "/access-tokens", token: mint(adminNoScope.Token),
		body: `{"name":"t","scopes":["leads:read"]}`}), 403, "forbidden")
	decode(t, e.do(req{method: "POST", path: "/access-tokens", token: mint(adminScoped.Token),
		body: `{"name":"t","scopes":["leads:read"]}`}), 201, nil)

	time.Sleep(1600 * time.Millisecond)
	for name, secret := range map[string]string{
		"expired": soon.Token, "unknown": "crm_pat_" + randHex(20), "api key": "crm_live_" + randHex(20),
		"truncated": adminScoped.Token[:20], "no prefix": "garbage",
	} {
		t.Run(name, func(t *testing.T) { wantProblem(t, e.verifyToken(secret), 401, "unauthenticated") })
	}
}

// verifier checks tokens against the service's own keys, as every service does.
func (e *env) verifier() *auth.Verifier {
	e.t.Helper()
	v, err := auth.NewVerifier(e.svc.Keys(), auth.Issuer, auth.Audience)
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}
