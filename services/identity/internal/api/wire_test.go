package api

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/envelope/wiretest"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

// TestWireTypes keeps the records this package encodes and the bodies it
// decodes equal to the public wire types the OpenAPI document is
// generated from (pkg/contract): same JSON fields, same nullability.
func TestWireTypes(t *testing.T) {
	t.Parallel()
	wiretest.Check(t, []wiretest.Case{
		{Name: "User", Service: userJSON{}, Wire: identityapi.User{}},
		{Name: "Team", Service: teamJSON{}, Wire: identityapi.Team{}},
		{Name: "APIKey", Service: apiKeyJSON{}, Wire: identityapi.APIKey{}},
		{Name: "AccessToken", Service: accessTokenJSON{}, Wire: identityapi.AccessToken{}},
		{Name: "AccessTokenInput", Service: identity.AccessTokenInput{}, Wire: identityapi.AccessTokenInput{}, NamesOnly: true},
		{Name: "Session", Service: sessionJSON{}, Wire: identityapi.Session{}},
		{Name: "UserInput", Service: identity.UserInput{}, Wire: identityapi.UserInput{}, NamesOnly: true},
		{Name: "UserUpdate", Service: identity.UserUpdate{}, Wire: identityapi.UserUpdate{}, NamesOnly: true},
		{Name: "TeamInput", Service: identity.TeamInput{}, Wire: identityapi.TeamInput{}, NamesOnly: true},
		{Name: "APIKeyInput", Service: identity.APIKeyInput{}, Wire: identityapi.APIKeyInput{}, NamesOnly: true},
		{Name: "LoginRequest", Service: identity.LoginInput{}, Wire: identityapi.LoginRequest{}, NamesOnly: true},
		{Name: "RefreshRequest", Service: identity.RefreshInput{}, Wire: identityapi.RefreshRequest{}, NamesOnly: true},
	})
}
