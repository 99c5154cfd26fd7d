// Package api is identity's HTTP surface: the public /auth, /users, /teams,
// /api-keys and /access-tokens routes and the /internal routes other services call.
package api

import (
	"errors"
	"net/http"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/list/listparam"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/timestamp"
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

// currentAdmin runs h only while the caller's stored account is an active
// admin. Identity owns the accounts, so unlike other services it need not
// trust a role claim for the access token's remaining lifetime: an admin
// who is deactivated or demoted loses these routes at once (401/403).
func (a *API) currentAdmin(h httpx.HandlerFunc) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		u, err := a.svc.Me(r.Context(), auth.FromContext(r.Context()).UserID())
		if err != nil {
			return err
		}
		if u.Role != auth.RoleAdmin {
			return problem.Forbidden("this action requires the admin role")
		}
		return h(w, r)
	}
}

// Routes returns the service's router.
func (a *API) Routes() http.Handler {
	mux := http.NewServeMux()
	jwt := func(h httpx.HandlerFunc) http.Handler { return a.verifier.Require(h) }
	admin := func(h httpx.HandlerFunc) http.Handler {
		return a.verifier.Require(auth.RequireAdmin(a.currentAdmin(h)))
	}
	internal := auth.RequireInternal(a.internalSecret)

	mux.Handle("POST /auth/login", httpx.HandlerFunc(a.login))
	mux.Handle("POST /auth/refresh", httpx.HandlerFunc(a.refresh))
	mux.Handle("POST /auth/logout", httpx.HandlerFunc(a.logout))
	mux.Handle("GET /auth/me", jwt(a.me))
	mux.Handle("GET /auth/jwks", httpx.HandlerFunc(a.jwks))
	mux.Handle("POST /auth/keys/rotate", admin(a.rotateKeys))

	mux.Handle("GET /users", admin(a.listUsers))
	mux.Handle("POST /users", admin(a.createUser))
	mux.Handle("GET /users/{id}", admin(a.getUser))
	mux.Handle("PUT /users/{id}", admin(a.updateUser))
	mux.Handle("DELETE /users/{id}", admin(a.deactivateUser))

	mux.Handle("GET /teams", admin(a.listTeams))
	mux.Handle("POST /teams", admin(a.createTeam))
	mux.Handle("GET /teams/{id}", admin(a.getTeam))
	mux.Handle("PUT /teams/{id}", admin(a.updateTeam))
	mux.Handle("DELETE /teams/{id}", admin(a.deleteTeam))

	mux.Handle("GET /api-keys", admin(a.listAPIKeys))
	mux.Handle("POST /api-keys", admin(a.createAPIKey))
	mux.Handle("DELETE /api-keys/{id}", admin(a.revokeAPIKey))

	mux.Handle("GET /access-tokens", admin(a.listAccessTokens))
	mux.Handle("POST /access-tokens", admin(a.createAccessToken))
	mux.Handle("DELETE /access-tokens/{id}", admin(a.revokeAccessToken))

	mux.Handle(identityapi.RouteUsers, internal(httpx.HandlerFunc(a.internalUsers)))
	mux.Handle(identityapi.RouteUser, internal(httpx.HandlerFunc(a.internalUser)))
	mux.Handle(identityapi.RouteVerifyKey, internal(httpx.HandlerFunc(a.verifyAPIKey)))
	mux.Handle(identityapi.RouteVerifyAccessToken, internal(httpx.HandlerFunc(a.verifyAccessToken)))

	return httpx.Routes(mux)
}

type userJSON struct {
	ID        int64          `json:"id"`
	Name      string         `json:"name"`
	Email     string         `json:"email"`
	Role      string         `json:"role"`
	TeamID    *int64         `json:"team_id"`
	Active    bool           `json:"active"`
	EditScope string         `json:"edit_scope"`
	CreatedAt timestamp.Time `json:"created_at"`
	UpdatedAt timestamp.Time `json:"updated_at"`
}

func userOut(u identity.User) userJSON {
	return userJSON{ID: u.ID, Name: u.Name, Email: u.Email, Role: u.Role, TeamID: u.TeamID, Active: u.Active,
		EditScope: u.EditScope, CreatedAt: timestamp.Of(u.CreatedAt), UpdatedAt: timestamp.Of(u.UpdatedAt)}
}

type sessionJSON struct {
	AccessToken  string   `json:"access_token"`
	TokenType    string   `json:"token_type"`
	ExpiresIn    int      `json:"expires_in"`
	RefreshToken string   `json:"refresh_token"`
	User         userJSON `json:"user"`
}

func sessionOut(s identity.Session) sessionJSON {
	return sessionJSON{AccessToken: s.AccessToken, TokenType: "Bearer", ExpiresIn: s.ExpiresIn,
		RefreshToken: s.RefreshToken, User: userOut(s.User)}
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
	httpx.OK(w, sessionOut(s))
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
	httpx.OK(w, sessionOut(s))
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
	httpx.JSON(w, http.StatusOK, map[string]any{"success": true, "message": "logged out"})
	return nil
}

func (a *API) me(w http.ResponseWriter, r *http.Request) error {
	u, err := a.svc.Me(r.Context(), auth.FromContext(r.Context()).UserID())
	if err != nil {
		return err
	}
	httpx.OK(w, userOut(u))
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
	httpx.Updated(w, map[string]string{"kid": kid}, "signing key rotated")
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
	out := make([]userJSON, len(users))
	for i, u := range users {
		out[i] = userOut(u)
	}
	// The user list has always carried "success", like a record's answer.
	page := envelope.NewPage(out, f.Query, total)
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
	httpx.Created(w, userOut(u), "user created")
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
	httpx.OK(w, userOut(u))
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
	httpx.Updated(w, userOut(u), "user updated")
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
	httpx.Deleted(w, "user deactivated")
	return nil
}

type teamJSON struct {
	ID        int64          `json:"id"`
	Name      string         `json:"name"`
	CreatedAt timestamp.Time `json:"created_at"`
	UpdatedAt timestamp.Time `json:"updated_at"`
}

func teamOut(t identity.Team) teamJSON {
	return teamJSON{ID: t.ID, Name: t.Name, CreatedAt: timestamp.Of(t.CreatedAt), UpdatedAt: timestamp.Of(t.UpdatedAt)}
}

func (a *API) listTeams(w http.ResponseWriter, r *http.Request) error {
	teams, err := a.svc.Teams(r.Context())
	if err != nil {
		return err
	}
	out := make([]teamJSON, len(teams))
	for i, t := range teams {
		out[i] = teamOut(t)
	}
	httpx.OK(w, out)
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
	httpx.Created(w, teamOut(t), "team created")
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
	httpx.OK(w, teamOut(t))
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
	httpx.Updated(w, teamOut(t), "team updated")
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
	httpx.Deleted(w, "team deleted")
	return nil
}

type apiKeyJSON struct {
	ID                 int64           `json:"id"`
	Name               string          `json:"name"`
	Prefix             string          `json:"prefix"`
	RateLimitPerMinute int             `json:"rate_limit_per_minute"`
	AllowedOrigins     []string        `json:"allowed_origins"`
	CreatedBy          *int64          `json:"created_by"`
	CreatedAt          timestamp.Time  `json:"created_at"`
	RevokedAt          *timestamp.Time `json:"revoked_at"`
	// Key is the secret, present only in the creation response.
	Key string `json:"key,omitempty"`
}

func apiKeyOut(k identity.APIKey) apiKeyJSON {
	origins := k.AllowedOrigins
	if origins == nil {
		origins = []string{}
	}
	return apiKeyJSON{ID: k.ID, Name: k.Name, Prefix: k.Prefix, RateLimitPerMinute: k.RateLimitPerMinute,
		AllowedOrigins: origins, CreatedBy: k.CreatedBy, CreatedAt: timestamp.Of(k.CreatedAt), RevokedAt: timestamp.Ptr(k.RevokedAt)}
}

func (a *API) listAPIKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := a.svc.APIKeys(r.Context())
	if err != nil {
		return err
	}
	out := make([]apiKeyJSON, len(keys))
	for i, k := range keys {
		out[i] = apiKeyOut(k)
	}
	httpx.OK(w, out)
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
	out := apiKeyOut(k)
	out.Key = secret
	noStore(w)
	httpx.Created(w, out, "api key created; store the key now, it is not shown again")
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
	httpx.Deleted(w, "api key revoked")
	return nil
}

func (a *API) internalUsers(w http.ResponseWriter, r *http.Request) error {
	users, err := a.svc.Directory(r.Context())
	if err != nil {
		return err
	}
	out := make([]directory.User, len(users))
	for i, u := range users {
		out[i] = u.Directory()
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
	httpx.OK(w, u.Directory())
	return nil
}

func (a *API) verifyAPIKey(w http.ResponseWriter, r *http.Request) error {
	var in identityapi.VerifyKeyRequest
	if err := httpx.Decode(w, r, &in, maxBody); err != nil {
		return err
	}
	if in.Key == "" {
		return problem.Invalid("key", "is required")
	}
	k, err := a.svc.VerifyAPIKey(r.Context(), in.Key)
	if err != nil {
		return err
	}
	out := apiKeyOut(k)
	httpx.OK(w, identityapi.VerifiedKey{ID: out.ID, Name: out.Name, Prefix: out.Prefix,
		RateLimitPerMinute: out.RateLimitPerMinute, AllowedOrigins: out.AllowedOrigins})
	return nil
}
