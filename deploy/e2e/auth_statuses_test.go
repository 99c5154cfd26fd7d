package e2e

import (
	"net/http"
	"testing"
)

// TestAuthRefusalsDocumented checks login and refresh against the identity
// service: a wrong password, an unknown email and a bad refresh token are
// each a 401 unauthenticated problem, and the published document declares
// 401 on both operations, so a generated client knows the answer (the
// contract check at the end of TestMain compares the bodies too).
func TestAuthRefusalsDocumented(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path string
		body       map[string]any
	}{
		{"wrong password", "/auth/login", map[string]any{"email": AdminEmail, "password": "not the admin password"}},
		{"unknown email", "/auth/login", map[string]any{"email": uniq("nobody") + "@example.test", "password": "some password 123"}},
		{"bad refresh token", "/auth/refresh", map[string]any{"refresh_token": "not-a-refresh-token"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := stack.Client().Do("POST", tc.path, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			wantProblemBody(t, r, http.StatusUnauthorized, "unauthenticated", nil)
			op := stack.Contract.ops[tc.path]["POST"]
			if op == nil {
				t.Fatalf("POST %s is not documented", tc.path)
			}
			if _, ok := op.responses["401"]; !ok {
				t.Errorf("POST %s: 401 is not documented", tc.path)
			}
		})
	}
}
