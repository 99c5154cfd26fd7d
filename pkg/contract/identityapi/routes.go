package identityapi

import (
	"net/http"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/route"
)

// Service is the context's name: it keys the gateway's upstream addresses.
const Service = "identity"

// userQuery is the filter of GET /users.
var userQuery = route.PageQuery(
	route.Q("role", "string", "", "admin", "user"), route.ID("team_id", ""), route.Q("active", "string", "", "true", "false"),
	route.Q("sort_by", "string", "Default name.", "name", "email", "role", "created_at", "updated_at"))

// The public routes of identity: sessions, signing keys, users, teams,
// API keys and integration tokens.
var (
	Login = route.Route{Method: http.MethodPost, Path: "/auth/login", Service: Service, Auth: route.Public,
		Tag: "Auth", Summary: "Log in with email and password; returns an access and a refresh token",
		Request: LoginRequest{}, Response: envelope.Record[Session]{}, Problems: []int{http.StatusUnauthorized}}
	Refresh = route.Route{Method: http.MethodPost, Path: "/auth/refresh", Service: Service, Auth: route.Public,
		Tag: "Auth", Summary: "Rotate a refresh token into a new token pair",
		Request: RefreshRequest{}, Response: envelope.Record[Session]{}, Problems: []int{http.StatusUnauthorized}}
	Logout = route.Route{Method: http.MethodPost, Path: "/auth/logout", Service: Service, Auth: route.Public,
		Tag: "Auth", Summary: "Revoke a refresh token",
		Request: RefreshRequest{}, Response: envelope.Deleted{}, Message: "logged out"}
	GetMe = route.Route{Method: http.MethodGet, Path: "/auth/me", Service: Service, Auth: route.JWT,
		Tag: "Auth", Summary: "The caller's user record", Response: envelope.Record[User]{}}
	GetJWKS = route.Route{Method: http.MethodGet, Path: "/auth/jwks", Service: Service, Auth: route.Public,
		Tag: "Auth", Summary: "Public keys that sign access tokens (JWKS)", Response: JWKS{}}
	RotateSigningKey = route.Route{Method: http.MethodPost, Path: "/auth/keys/rotate", Service: Service, Auth: route.Admin,
		Tag: "Auth", Summary: "Rotate the token signing key", Response: envelope.Record[RotatedKey]{}, Message: "signing key rotated"}

	ListUsers = route.Route{Method: http.MethodGet, Path: "/users", Service: Service, Auth: route.Admin,
		Tag: "Users", Summary: "List users", Query: userQuery, Response: envelope.Page[User]{}}
	CreateUser = route.Route{Method: http.MethodPost, Path: "/users", Service: Service, Auth: route.Admin,
		Tag: "Users", Summary: "Create a user", Request: UserInput{}, Status: http.StatusCreated,
		Response: envelope.Record[User]{}, Message: "user created", Problems: []int{http.StatusConflict}}
	GetUser = route.Route{Method: http.MethodGet, Path: "/users/{id}", Service: Service, Auth: route.Admin,
		Tag: "Users", Summary: "Get a user", Response: envelope.Record[User]{}}
	UpdateUser = route.Route{Method: http.MethodPut, Path: "/users/{id}", Service: Service, Auth: route.Admin,
		Tag: "Users", Summary: "Update a user", Request: UserUpdate{},
		Response: envelope.Record[User]{}, Message: "user updated", Problems: []int{http.StatusConflict}}
	DeactivateUser = route.Route{Method: http.MethodDelete, Path: "/users/{id}", Service: Service, Auth: route.Admin,
		Tag: "Users", Summary: "Deactivate a user (users stay referenced)",
		Response: envelope.Deleted{}, Message: "user deactivated", Problems: []int{http.StatusConflict}}

	ListTeams = route.Route{Method: http.MethodGet, Path: "/teams", Service: Service, Auth: route.Admin,
		Tag: "Teams", Summary: "List teams", Response: envelope.List[Team]{}}
	CreateTeam = route.Route{Method: http.MethodPost, Path: "/teams", Service: Service, Auth: route.Admin,
		Tag: "Teams", Summary: "Create a team", Request: TeamInput{}, Status: http.StatusCreated,
		Response: envelope.Record[Team]{}, Message: "team created", Problems: []int{http.StatusConflict}}
	GetTeam = route.Route{Method: http.MethodGet, Path: "/teams/{id}", Service: Service, Auth: route.Admin,
		Tag: "Teams", Summary: "Get a team", Response: envelope.Record[Team]{}}
	UpdateTeam = route.Route{Method: http.MethodPut, Path: "/teams/{id}", Service: Service, Auth: route.Admin,
		Tag: "Teams", Summary: "Update a team", Request: TeamInput{},
		Response: envelope.Record[Team]{}, Message: "team updated", Problems: []int{http.StatusConflict}}
	DeleteTeam = route.Route{Method: http.MethodDelete, Path: "/teams/{id}", Service: Service, Auth: route.Admin,
		Tag: "Teams", Summary: "Delete a team", Response: envelope.Deleted{}, Message: "team deleted"}

	ListAPIKeys = route.Route{Method: http.MethodGet, Path: "/api-keys", Service: Service, Auth: route.Admin,
		Tag: "API keys", Summary: "List API keys (without secrets)", Response: envelope.List[APIKey]{}}
	CreateAPIKey = route.Route{Method: http.MethodPost, Path: "/api-keys", Service: Service, Auth: route.Admin,
		Tag: "API keys", Summary: "Create an API key; the secret is returned once", Request: APIKeyInput{}, Status: http.StatusCreated,
		Response: envelope.Record[APIKey]{}, Message: "api key created; store the key now, it is not shown again"}
	RevokeAPIKey = route.Route{Method: http.MethodDelete, Path: "/api-keys/{id}", Service: Service, Auth: route.Admin,
		Tag: "API keys", Summary: "Revoke an API key (effective within 5 s)", Response: envelope.Deleted{}, Message: "api key revoked"}

	ListAccessTokens = route.Route{Method: http.MethodGet, Path: "/access-tokens", Service: Service, Auth: route.Admin,
		Tag: "Access tokens", Summary: "List integration tokens (prefix, scopes, role, last use; without secrets)",
		Response: envelope.List[AccessToken]{}}
	CreateAccessToken = route.Route{Method: http.MethodPost, Path: "/access-tokens", Service: Service, Auth: route.Admin,
		Tag: "Access tokens", Summary: "Create an integration token; the secret (crm_pat_...) is returned once",
		Request: AccessTokenInput{}, Status: http.StatusCreated, Response: envelope.Record[AccessToken]{},
		Message: "access token created; store the token now, it is not shown again"}
	RevokeAccessToken = route.Route{Method: http.MethodDelete, Path: "/access-tokens/{id}", Service: Service, Auth: route.Admin,
		Tag: "Access tokens", Summary: "Revoke an integration token (effective within 5 s)",
		Response: envelope.Deleted{}, Message: "access token revoked"}
)

// Routes are identity's public routes, in the document's order.
var Routes = []route.Route{
	Login, Refresh, Logout, GetMe, GetJWKS, RotateSigningKey,
	ListUsers, CreateUser, GetUser, UpdateUser, DeactivateUser,
	ListTeams, CreateTeam, GetTeam, UpdateTeam, DeleteTeam,
	ListAPIKeys, CreateAPIKey, RevokeAPIKey,
	ListAccessTokens, CreateAccessToken, RevokeAccessToken,
	ListAuditLog, VerifyAuditLog,
}
