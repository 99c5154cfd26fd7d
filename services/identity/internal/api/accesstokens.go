package api

import (
	"net/http"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

type accessTokenJSON struct {
	ID         int64           `json:"id"`
	Name       string          `json:"name"`
	Prefix     string          `json:"prefix"`
	Scopes     []string        `json:"scopes"`
	Role       string          `json:"role"`
	UserID     int64           `json:"user_id"`
	CreatedBy  *int64          `json:"created_by"`
	CreatedAt  timestamp.Time  `json:"created_at"`
	ExpiresAt  *timestamp.Time `json:"expires_at"`
	LastUsedAt *timestamp.Time `json:"last_used_at"`
	RevokedAt  *timestamp.Time `json:"revoked_at"`
	// Token is the secret, present only in the creation response.
	Token string `json:"token,omitempty"`
}

func accessTokenOut(t identity.AccessToken) accessTokenJSON {
	scopes := t.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return accessTokenJSON{ID: t.ID, Name: t.Name, Prefix: t.Prefix, Scopes: scopes, Role: t.Role, UserID: t.UserID,
		CreatedBy: t.CreatedBy, CreatedAt: timestamp.Of(t.CreatedAt), ExpiresAt: timestamp.Ptr(t.ExpiresAt),
		LastUsedAt: timestamp.Ptr(t.LastUsedAt), RevokedAt: timestamp.Ptr(t.RevokedAt)}
}

func (a *API) listAccessTokens(w http.ResponseWriter, r *http.Request) error {
	tokens, err := a.svc.AccessTokens(r.Context())
	if err != nil {
		return err
	}
	out := make([]accessTokenJSON, len(tokens))
	for i, t := range tokens {
		out[i] = accessTokenOut(t)
	}
	httpx.OK(w, out)
	return nil
}

func (a *API) createAccessToken(w http.ResponseWriter, r *http.Request) error {
	var in identity.AccessTokenInput
	if err := httpx.Decode(w, r, &in, maxBody); err != nil {
		return err
	}
	t, secret, err := a.svc.CreateAccessToken(r.Context(), in, auth.FromContext(r.Context()))
	if err != nil {
		return err
	}
	out := accessTokenOut(t)
	out.Token = secret
	noStore(w)
	// A token has no GET of its own: its URL is the one that revokes it.
	created(w, identityapi.CreateAccessToken, identityapi.RevokeAccessToken.Location(t.ID), out)
	return nil
}

func (a *API) revokeAccessToken(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	if err := a.svc.RevokeAccessToken(r.Context(), id); err != nil {
		return err
	}
	httpx.Deleted(w, identityapi.RevokeAccessToken.Message)
	return nil
}

func (a *API) verifyAccessToken(w http.ResponseWriter, r *http.Request) error {
	var in identityapi.VerifyAccessTokenRequest
	if err := httpx.Decode(w, r, &in, maxBody); err != nil {
		return err
	}
	if in.Token == "" {
		return fault.Invalid("token", "is required")
	}
	v, err := a.svc.VerifyAccessToken(r.Context(), in.Token)
	if err != nil {
		return err
	}
	noStore(w)
	httpx.OK(w, identityapi.VerifiedAccessToken{ID: v.Token.ID, UserID: v.Token.UserID, Role: v.Token.Role,
		Scopes: v.Token.Scopes, AccessToken: v.AccessToken, ExpiresIn: v.ExpiresIn})
	return nil
}
