// Package api is identity's HTTP edge: the public routes identityapi
// declares (sessions, signing keys, users, teams, API keys, integration
// tokens) and the internal routes other services call. It decodes bodies
// and query strings into the core's types, and renders the core's answers
// and faults.
package api

import (
	"errors"
	"net/http"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/list/listparam"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

// maxBody bounds identity's request bodies; none needs more than a few KB.
const maxBody = 64 << 10

// API holds the handlers' dependencies.
type API struct {
	svc            *identity.Service
	verifier       *auth.Verifier
	internalSecret string
	proxies        *ClientIP
	// privacy serves privacyapi.Routes when set (WithPrivacy).
	privacy *identity.Privacy
}

// New wires the handlers. The verifier checks tokens against the service's
// own keyring: identity never trusts the gateway's word for who is calling.
func New(svc *identity.Service, verifier *auth.Verifier, internalSecret string, proxies *ClientIP) (*API, error) {
	if svc == nil || verifier == nil || proxies == nil {
		return nil, errors.New("api: service, verifier and client ip resolver are required")
	}
	if err := auth.CheckInternalSecret(internalSecret); err != nil {
		return nil, err
	}
	return &API{svc: svc, verifier: verifier, internalSecret: internalSecret, proxies: proxies}, nil
}

// currentAdmin passes a request on only while the caller's stored account
// is an active admin (identity.Service.CurrentAdmin): a deactivated or
// demoted admin loses these routes at once (401/403), whatever the role
// claim of a token still valid says.
func (a *API) currentAdmin(next http.Handler) http.Handler {
	return httpx.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if _, err := a.svc.CurrentAdmin(r.Context(), auth.FromContext(r.Context()).UserID()); err != nil {
			return err
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

// Routes returns the service's router: each public handler is mounted on
// its declaration in identityapi behind the declaration's policy, and the
// internal routes on identityapi's internal patterns behind the shared
// secret.
func (a *API) Routes() http.Handler {
	mux := http.NewServeMux()
	guards := httpx.Guards{
		route.Public: func(h http.Handler) http.Handler { return h },
		route.JWT:    a.verifier.Require,
		route.Admin: func(h http.Handler) http.Handler {
			return a.verifier.Require(auth.RequireAdmin(a.currentAdmin(h)))
		},
	}
	for _, m := range []struct {
		route   route.Route
		handler httpx.HandlerFunc
	}{
		{identityapi.Login, a.login},
		{identityapi.Refresh, a.refresh},
		{identityapi.Logout, a.logout},
		{identityapi.GetMe, a.me},
		{identityapi.GetJWKS, a.jwks},
		{identityapi.RotateSigningKey, a.rotateKeys},

		{identityapi.ListUsers, a.listUsers},
		{identityapi.CreateUser, a.createUser},
		{identityapi.GetUser, a.getUser},
		{identityapi.UpdateUser, a.updateUser},
		{identityapi.DeactivateUser, a.deactivateUser},

		{identityapi.ListTeams, a.listTeams},
		{identityapi.CreateTeam, a.createTeam},
		{identityapi.GetTeam, a.getTeam},
		{identityapi.UpdateTeam, a.updateTeam},
		{identityapi.DeleteTeam, a.deleteTeam},

		{identityapi.ListAPIKeys, a.listAPIKeys},
		{identityapi.CreateAPIKey, a.createAPIKey},
		{identityapi.RevokeAPIKey, a.revokeAPIKey},

		{identityapi.ListAccessTokens, a.listAccessTokens},
		{identityapi.CreateAccessToken, a.createAccessToken},
		{identityapi.RevokeAccessToken, a.revokeAccessToken},

		{identityapi.ListAuditLog, a.listAuditLog},
		{identityapi.VerifyAuditLog, a.verifyAuditLog},
	} {
		guards.Mount(mux, m.route, m.handler)
	}
	for r, h := range a.privacyRoutes() {
		guards.Mount(mux, *r, h)
	}

	// Internal calls act for the caller the calling context names.
	internal := history.Internal(auth.RequireInternal(a.internalSecret))
	mux.Handle(identityapi.RouteUsers, internal(httpx.HandlerFunc(a.internalUsers)))
	mux.Handle(identityapi.RouteUser, internal(httpx.HandlerFunc(a.internalUser)))
	mux.Handle(identityapi.RouteVerifyKey, internal(httpx.HandlerFunc(a.verifyAPIKey)))
	mux.Handle(identityapi.RouteVerifyAccessToken, internal(httpx.HandlerFunc(a.verifyAccessToken)))

	return a.withClient(httpx.Routes(mux))
}

// created answers op's 201 with the record and its Location, the URL a
// client reads the record at, built from that route's declaration.
func created(w http.ResponseWriter, op route.Route, location string, v any) {
	w.Header().Set("Location", location)
	httpx.Created(w, v, op.Message)
}

// noStore keeps tokens out of caches (RFC 6749 §5.1).
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}

func (a *API) login(w http.ResponseWriter, r *http.Request) error {
	var in identity.LoginInput
	if err := httpx.Decode(w, r, &in, maxBody); err != nil {
		return err
	}
	s, err := a.svc.Login(r.Context(), in, a.proxies.Of(r))
	if err != nil {
		return err
	}
	noStore(w)
	httpx.OK(w, s)
	return nil
}

func (a *API) refresh(w http.ResponseWriter, r *http.Request) error {
	var in identity.RefreshInput
	if err := httpx.Decode(w, r, &in, maxBody); err != nil {
		return err
	}
	s, err := a.svc.Refresh(r.Context(), in)
	if err != nil {
		return err
	}
	noStore(w)
	httpx.OK(w, s)
	return nil
}

func (a *API) logout(w http.ResponseWriter, r *http.Request) error {
	var in identity.RefreshInput
	if err := httpx.Decode(w, r, &in, maxBody); err != nil {
		return err
	}
	if err := a.svc.Logout(r.Context(), in); err != nil {
		return err
	}
	httpx.Deleted(w, identityapi.Logout.Message)
	return nil
}

func (a *API) me(w http.ResponseWriter, r *http.Request) error {
	u, err := a.svc.Me(r.Context(), auth.FromContext(r.Context()).UserID())
	if err != nil {
		return err
	}
	httpx.OK(w, u)
	return nil
}

func (a *API) jwks(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "public, max-age=60")
	httpx.JSON(w, http.StatusOK, a.svc.Keys().JWKS(r.Context()))
	return nil
}

func (a *API) rotateKeys(w http.ResponseWriter, r *http.Request) error {
	kid, err := a.svc.RotateKeys(r.Context())
	if err != nil {
		return err
	}
	httpx.Updated(w, map[string]string{"kid": kid}, identityapi.RotateSigningKey.Message)
	return nil
}

func (a *API) listUsers(w http.ResponseWriter, r *http.Request) error {
	p := listparam.Parse(r.URL.Query(), listparam.Options{Sorts: identity.UserSorts, DefaultSort: identity.DefaultUserSort})
	f := identity.UserFilter{Role: p.Enum("role", auth.RoleAdmin, auth.RoleUser), TeamID: p.Int64("team_id")}
	switch p.Enum("active", "true", "false") {
	case "true":
		t := true
		f.Active = &t
	case "false":
		f.Active = new(bool)
	}
	if err := p.Err(); err != nil {
		return err
	}
	f.Query = p.Query()
	users, total, err := a.svc.ListUsers(r.Context(), f)
	if err != nil {
		return err
	}
	// The user list has always carried "success", like a record's answer.
	page := envelope.NewPage(users, f.Query, total)
	page.Success = true
	httpx.JSON(w, http.StatusOK, page)
	return nil
}

func (a *API) createUser(w http.ResponseWriter, r *http.Request) error {
	var in identity.UserInput
	if err := httpx.Decode(w, r, &in, maxBody); err != nil {
		return err
	}
	u, err := a.svc.CreateUser(r.Context(), in)
	if err != nil {
		return err
	}
	created(w, identityapi.CreateUser, identityapi.GetUser.Location(u.ID), u)
	return nil
}

func (a *API) getUser(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	u, err := a.svc.User(r.Context(), id)
	if err != nil {
		return err
	}
	httpx.OK(w, u)
	return nil
}

func (a *API) updateUser(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	var in identity.UserUpdate
	if err := httpx.Decode(w, r, &in, maxBody); err != nil {
		return err
	}
	u, err := a.svc.UpdateUser(r.Context(), id, in)
	if err != nil {
		return err
	}
	httpx.Updated(w, u, identityapi.UpdateUser.Message)
	return nil
}

func (a *API) deactivateUser(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	if _, err := a.svc.DeactivateUser(r.Context(), id); err != nil {
		return err
	}
	httpx.Deleted(w, identityapi.DeactivateUser.Message)
	return nil
}

func (a *API) listTeams(w http.ResponseWriter, r *http.Request) error {
	teams, err := a.svc.Teams(r.Context())
	if err != nil {
		return err
	}
	httpx.OK(w, teams)
	return nil
}

func (a *API) createTeam(w http.ResponseWriter, r *http.Request) error {
	var in identity.TeamInput
	if err := httpx.Decode(w, r, &in, maxBody); err != nil {
		return err
	}
	t, err := a.svc.CreateTeam(r.Context(), in)
	if err != nil {
		return err
	}
	created(w, identityapi.CreateTeam, identityapi.GetTeam.Location(t.ID), t)
	return nil
}

func (a *API) getTeam(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	t, err := a.svc.Team(r.Context(), id)
	if err != nil {
		return err
	}
	httpx.OK(w, t)
	return nil
}

func (a *API) updateTeam(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	var in identity.TeamInput
	if err := httpx.Decode(w, r, &in, maxBody); err != nil {
		return err
	}
	t, err := a.svc.UpdateTeam(r.Context(), id, in)
	if err != nil {
		return err
	}
	httpx.Updated(w, t, identityapi.UpdateTeam.Message)
	return nil
}

func (a *API) deleteTeam(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	if err := a.svc.DeleteTeam(r.Context(), id); err != nil {
		return err
	}
	httpx.Deleted(w, identityapi.DeleteTeam.Message)
	return nil
}

func (a *API) listAPIKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := a.svc.APIKeys(r.Context())
	if err != nil {
		return err
	}
	httpx.OK(w, keys)
	return nil
}

func (a *API) createAPIKey(w http.ResponseWriter, r *http.Request) error {
	var in identity.APIKeyInput
	if err := httpx.Decode(w, r, &in, maxBody); err != nil {
		return err
	}
	k, secret, err := a.svc.CreateAPIKey(r.Context(), in, auth.FromContext(r.Context()).UserID())
	if err != nil {
		return err
	}
	k.Key = secret
	noStore(w)
	// A key has no GET of its own: its URL is the one that revokes it.
	created(w, identityapi.CreateAPIKey, identityapi.RevokeAPIKey.Location(k.ID), k)
	return nil
}

func (a *API) revokeAPIKey(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	if err := a.svc.RevokeAPIKey(r.Context(), id); err != nil {
		return err
	}
	httpx.Deleted(w, identityapi.RevokeAPIKey.Message)
	return nil
}

func (a *API) internalUsers(w http.ResponseWriter, r *http.Request) error {
	users, err := a.svc.Directory(r.Context())
	if err != nil {
		return err
	}
	out := make([]directory.User, len(users))
	for i, u := range users {
		out[i] = identity.DirectoryEntry(u)
	}
	httpx.OK(w, out)
	return nil
}

// internalUser is one user's directory entry, for a read model that
// misses an id (a user created a moment ago, its event not yet consumed).
func (a *API) internalUser(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	u, err := a.svc.User(r.Context(), id)
	if err != nil {
		return err
	}
	httpx.OK(w, identity.DirectoryEntry(u))
	return nil
}

func (a *API) verifyAPIKey(w http.ResponseWriter, r *http.Request) error {
	var in identityapi.VerifyKeyRequest
	if err := httpx.Decode(w, r, &in, maxBody); err != nil {
		return err
	}
	if in.Key == "" {
		return fault.Invalid("key", "is required")
	}
	k, err := a.svc.VerifyAPIKey(r.Context(), in.Key)
	if err != nil {
		return err
	}
	httpx.OK(w, identityapi.VerifiedKey{ID: k.ID, Name: k.Name, Prefix: k.Prefix,
		RateLimitPerMinute: k.RateLimitPerMinute, AllowedOrigins: k.AllowedOrigins})
	return nil
}
