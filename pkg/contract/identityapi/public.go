package identityapi

import (
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/timestamp"
)

// User is an account of the CRM.
type User struct {
	ID        int64          `json:"id" minimum:"1" example:"3"`
	Name      string         `json:"name" maxLength:"100" example:"Sam Sales"`
	Email     string         `json:"email" format:"email" maxLength:"255" example:"sam@example.com"`
	Role      string         `json:"role" enum:"admin,user" example:"user"`
	TeamID    *int64         `json:"team_id" minimum:"1"`
	Active    bool           `json:"active" example:"true"`
	EditScope string         `json:"edit_scope" enum:"company,team,own" example:"company" description:"What the user may change: every record (company), records assigned to a member of their team or unassigned (team), or records assigned to or created by them (own). Admins change everything."`
	CreatedAt timestamp.Time `json:"created_at"`
	UpdatedAt timestamp.Time `json:"updated_at"`
}

// UserInput is the body of CreateUser.
type UserInput struct {
	Name      string `json:"name" minLength:"1" maxLength:"100" example:"Sam Sales"`
	Email     string `json:"email" minLength:"1" maxLength:"255" format:"email" example:"sam@example.com"`
	Password  string `json:"password" writeOnly:"true" minLength:"10" maxLength:"256" example:"correct horse battery"`
	Role      string `json:"role,omitempty" enum:"admin,user" description:"Default user."`
	TeamID    *int64 `json:"team_id,omitempty" nullable:"true" minimum:"1"`
	EditScope string `json:"edit_scope,omitempty" enum:"company,team,own" description:"Default company."`
}

// UserUpdate is the body of UpdateUser; name and email are required,
// the rest unchanged when absent. The optional fields are patch fields
// because identity must tell absent (keep) from null: team_id null clears
// the team, while null or "" keeps the password, role and edit scope.
type UserUpdate struct {
	Name      string              `json:"name" minLength:"1" maxLength:"100"`
	Email     string              `json:"email" minLength:"1" maxLength:"255" format:"email"`
	Password  patch.Field[string] `json:"password,omitzero" writeOnly:"true" minLength:"10" maxLength:"256" example:"correct horse battery"`
	Role      patch.Field[string] `json:"role,omitzero" enum:"admin,user"`
	TeamID    patch.Field[int64]  `json:"team_id,omitzero" nullable:"true" minimum:"1"`
	Active    patch.Field[bool]   `json:"active,omitzero"`
	EditScope patch.Field[string] `json:"edit_scope,omitzero" enum:"company,team,own"`
}

// Team groups users for scope=team.
type Team struct {
	ID        int64          `json:"id" minimum:"1" example:"1"`
	Name      string         `json:"name" maxLength:"100" example:"Sales EMEA"`
	CreatedAt timestamp.Time `json:"created_at"`
	UpdatedAt timestamp.Time `json:"updated_at"`
}

// TeamInput is the body of CreateTeam and UpdateTeam.
type TeamInput struct {
	Name string `json:"name" minLength:"1" maxLength:"100" example:"Sales EMEA"`
}

// APIKey is a key for the public intake API. key, the secret, is present
// only in the answer to its creation.
type APIKey struct {
	ID                 int64           `json:"id" minimum:"1" example:"4"`
	Name               string          `json:"name" maxLength:"100" example:"website"`
	Prefix             string          `json:"prefix" example:"crm_3fA9"`
	RateLimitPerMinute int             `json:"rate_limit_per_minute" minimum:"1" maximum:"100000" example:"60"`
	AllowedOrigins     []string        `json:"allowed_origins" nullable:"false" maxItems:"50" description:"Browser origins allowed to use the key; empty allows any." example:"[\"https://www.example.com\"]"`
	CreatedBy          *int64          `json:"created_by" minimum:"1"`
	CreatedAt          timestamp.Time  `json:"created_at"`
	RevokedAt          *timestamp.Time `json:"revoked_at"`
	Key                string          `json:"key,omitempty" readOnly:"true" description:"The secret; returned once, on create."`
}

// APIKeyInput is the body of CreateAPIKey.
type APIKeyInput struct {
	Name               string   `json:"name" minLength:"1" maxLength:"100" example:"website"`
	RateLimitPerMinute *int     `json:"rate_limit_per_minute,omitempty" nullable:"true" minimum:"1" maximum:"100000" example:"60"`
	AllowedOrigins     []string `json:"allowed_origins,omitempty" maxItems:"50" example:"[\"https://www.example.com\"]"`
}

// LoginRequest is the body of Login.
type LoginRequest struct {
	Email    string `json:"email" minLength:"1" example:"admin@example.com"`
	Password string `json:"password" minLength:"1" writeOnly:"true" example:"correct horse battery"`
}

// RefreshRequest is the body of Refresh and Logout.
type RefreshRequest struct {
	RefreshToken string `json:"refresh_token" minLength:"1" example:"rt_9c1f..."`
}

// Session is a token pair with its user.
type Session struct {
	AccessToken  string `json:"access_token" example:"eyJhbGciOiJFZERTQSJ9..."`
	TokenType    string `json:"token_type" enum:"Bearer" example:"Bearer"`
	ExpiresIn    int    `json:"expires_in" minimum:"1" description:"Seconds the access token lives." example:"900"`
	RefreshToken string `json:"refresh_token" example:"rt_9c1f..."`
	User         User   `json:"user"`
}

// JWK is one Ed25519 public key of the token signer.
type JWK struct {
	Kty string `json:"kty" example:"OKP"`
	Crv string `json:"crv" example:"Ed25519"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg" example:"EdDSA"`
	Use string `json:"use" example:"sig"`
}

// JWKS answers GetJWKS.
type JWKS struct {
	Keys []JWK `json:"keys" nullable:"false"`
}

// RotatedKey answers RotateSigningKey.
type RotatedKey struct {
	Kid string `json:"kid"`
}
