package identityapi

import (
	"time"

	"github.com/opencrm/crm/pkg/timestamp"
)

// AccessToken is an integration token (crm_pat_...), which acts as its own
// service user (user_id) limited to its scopes. token, the secret, is
// present only in the answer to its creation.
type AccessToken struct {
	ID         int64           `json:"id" minimum:"1" example:"3"`
	Name       string          `json:"name" maxLength:"100" example:"billing sync"`
	Prefix     string          `json:"prefix" example:"crm_pat_Xq3k9ZaB"`
	Scopes     []string        `json:"scopes" nullable:"false" description:"contacts, leads, deals, contracts, emails, webhooks with :read or :write (write implies read), or admin." example:"[\"contacts:read\",\"deals:write\"]"`
	Role       string          `json:"role" enum:"admin,user" example:"user"`
	UserID     int64           `json:"user_id" minimum:"1" description:"The token's service user, shown as created_by of what it creates." example:"12"`
	CreatedBy  *int64          `json:"created_by" minimum:"1"`
	CreatedAt  timestamp.Time  `json:"created_at"`
	ExpiresAt  *timestamp.Time `json:"expires_at"`
	LastUsedAt *timestamp.Time `json:"last_used_at" description:"Updated at most once a minute."`
	RevokedAt  *timestamp.Time `json:"revoked_at"`
	Token      string          `json:"token,omitempty" readOnly:"true" description:"The secret; returned once, on create." example:"crm_pat_Xq3k9ZaB..."`
}

// AccessTokenInput is the body of CreateAccessToken.
type AccessTokenInput struct {
	Name      string     `json:"name" minLength:"1" maxLength:"100" example:"billing sync"`
	Scopes    []string   `json:"scopes" minItems:"1" maxItems:"32" example:"[\"contacts:read\",\"deals:write\"]"`
	Role      string     `json:"role,omitempty" enum:"admin,user" description:"Default user; the admin scope needs admin." example:"user"`
	ExpiresAt *time.Time `json:"expires_at,omitempty" nullable:"true" description:"Optional; must be in the future."`
}
