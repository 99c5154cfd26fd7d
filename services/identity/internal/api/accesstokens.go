package api

import (
	"net/http"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

func (a *API) listAccessTokens(w http.ResponseWriter, r *http.Request) error {
	tokens, err := a.svc.AccessTokens(r.Context())
	if err != nil {
		return err
	}
	httpx.OK(w, tokens)
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
	t.Token = secret
	noStore(w)
	// A token has no GET of its own: its URL is the one that revokes it.
	created(w, identityapi.CreateAccessToken, identityapi.RevokeAccessToken.Location(t.ID), t)
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
