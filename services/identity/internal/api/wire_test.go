package api

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

// TestWireTypes keeps the records this package encodes and the bodies it
// decodes equal to the public wire types the OpenAPI document is
// generated from (pkg/contract): same JSON fields, same nullability.
func TestWireTypes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		service, wire any
		namesOnly     bool
	}{
		{"User", userJSON{}, identityapi.User{}, false},
		{"Team", teamJSON{}, identityapi.Team{}, false},
		{"APIKey", apiKeyJSON{}, identityapi.APIKey{}, false},
		{"AccessToken", accessTokenJSON{}, identityapi.AccessToken{}, false},
		{"AccessTokenInput", identity.AccessTokenInput{}, identityapi.AccessTokenInput{}, true},
		{"Session", sessionJSON{}, identityapi.Session{}, false},
		{"UserInput", identity.UserInput{}, identityapi.UserInput{}, true},
		{"UserUpdate", identity.UserUpdate{}, identityapi.UserUpdate{}, true},
		{"TeamInput", identity.TeamInput{}, identityapi.TeamInput{}, true},
		{"APIKeyInput", identity.APIKeyInput{}, identityapi.APIKeyInput{}, true},
		{"LoginRequest", identity.LoginInput{}, identityapi.LoginRequest{}, true},
		{"RefreshRequest", identity.RefreshInput{}, identityapi.RefreshRequest{}, true},
	}
	for _, tc := range tests {
		for _, m := range envelope.FieldMismatches(tc.service, tc.wire, tc.namesOnly) {
			t.Errorf("%s: %s", tc.name, m)
		}
	}
}
