package identity

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/validate"
)

// Config holds the session rules.
type Config struct {
	// AccessTTL is an access token's lifetime (expires_in).
	AccessTTL time.Duration
	// RefreshTTL is a refresh token's lifetime; each rotation starts a new one.
	RefreshTTL time.Duration
	// Limits are the login attempts allowed per throttle window.
	Limits Limits
}

// Service implements the identity use cases.
type Service struct {
	store    Store
	hasher   *Hasher
	keys     *Keyring
	throttle Throttle
	cfg      Config
	log      *slog.Logger
	now      func() time.Time
}

// NewService wires the use cases.
func NewService(store Store, hasher *Hasher, keys *Keyring, throttle Throttle, cfg Config, log *slog.Logger) (*Service, error) {
	if store == nil || hasher == nil || keys == nil || throttle == nil || log == nil {
		return nil, errors.New("identity: service needs store, hasher, keys, throttle and logger")
	}
	if cfg.AccessTTL <= 0 || cfg.RefreshTTL <= 0 {
		return nil, errors.New("identity: token lifetimes must be positive")
	}
	return &Service{store: store, hasher: hasher, keys: keys, throttle: throttle, cfg: cfg, log: log, now: time.Now}, nil
}

// Keys exposes the keyring (JWKS, verification, rotation).
func (s *Service) Keys() *Keyring { return s.keys }

// Session is what a login or refresh returns.
type Session struct {
	AccessToken  string
	ExpiresIn    int
	RefreshToken string
	User         User
}

// LoginInput is the body of POST /auth/login.
type LoginInput struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// Login checks the password and opens a session. Unknown email, wrong
// password and deactivated account all give the same error after the same
// argon2 work; attempts are throttled per (email, client IP), per email
// and per client IP (Limits).
func (s *Service) Login(ctx context.Context, in LoginInput, clientIP string) (Session, error) {
	var v validate.Errors
	v.Required("email", in.Email)
	if in.Password == "" {
		v.Add("password", "is required")
	}
	if err := v.Err(); err != nil {
		return Session{}, err
	}
	if len(in.Email) > 254 || validate.Text(in.Email) != "" || len(in.Password) > MaxPasswordLength {
		// No account can have such an address: the same answer as a wrong
		// password, without asking the database.
		return Session{}, ErrInvalidCredentials
	}
	keys := keysFor(in.Email, clientIP)
	emailCounted := false
	if s.cfg.Limits.enabled() {
		// Counted before the password is checked: a burst of concurrent
		// attempts gets no more checks than the limit, whatever the
		// timing. The same for unknown emails, before the lookup.
		var err error
		if emailCounted, err = s.admit(ctx, keys); err != nil {
			return Session{}, err
		}
	}
	creds, err := s.store.CredentialsByEmail(ctx, strings.TrimSpace(in.Email))
	ok := false
	switch {
	case errors.Is(err, ErrUserNotFound):
		s.hasher.Burn(ctx, in.Password)
	case err != nil:
		return Session{}, err
	default:
		ok, err = s.hasher.Verify(ctx, in.Password, creds.PasswordHash)
		if err != nil {
			return Session{}, err
		}
	}
	if !ok || !creds.User.Active {
		return Session{}, ErrInvalidCredentials
	}
	refresh, err := randomSecret(32)
	if err != nil {
		return Session{}, err
	}
	// The hash was checked outside any transaction (argon2 takes tens of
	// milliseconds); StartSession refuses if the password changed or the
	// account was deactivated meanwhile, and returns the account as it is
	// now (a role changed meanwhile is the one signed).
	u, err := s.store.StartSession(ctx, creds.PasswordHash, RefreshToken{
		Hash: HashSecret(refresh), FamilyID: uuid.NewString(), UserID: creds.User.ID, ExpiresAt: s.now().Add(s.cfg.RefreshTTL),
	})
	if err != nil {
		return Session{}, err
	}
	if s.cfg.Limits.enabled() {
		s.settle(ctx, keys, emailCounted)
	}
	return s.session(ctx, u, refresh)
}

func (s *Service) session(ctx context.Context, u User, refresh string) (Session, error) {
	now := s.now()
	claims := auth.Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: auth.Issuer, Audience: jwt.ClaimStrings{auth.Audience},
			Subject:  strconv.FormatInt(u.ID, 10),
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(s.cfg.AccessTTL)),
		},
		Role: u.Role, TeamID: u.TeamID, Name: u.Name,
	}
	tok, err := s.keys.Sign(ctx, claims)
	if err != nil {
		return Session{}, fmt.Errorf("sign access token: %w", err)
	}
	return Session{AccessToken: tok, ExpiresIn: int(s.cfg.AccessTTL / time.Second), RefreshToken: refresh, User: u}, nil
}

// RefreshInput is the body of POST /auth/refresh and /auth/logout.
type RefreshInput struct {
	RefreshToken string `json:"refresh_token"`
}

func (in RefreshInput) check() error {
	var v validate.Errors
	v.Required("refresh_token", in.RefreshToken)
	if err := v.Err(); err != nil {
		return err
	}
	if len(in.RefreshToken) > maxSecretLength {
		return ErrInvalidRefresh
	}
	return nil
}

// Refresh rotates a refresh token: the presented one is spent and a new
// pair is issued in the same family. Presenting a spent token again is
// treated as theft and revokes the family.
func (s *Service) Refresh(ctx context.Context, in RefreshInput) (Session, error) {
	if err := in.check(); err != nil {
		return Session{}, err
	}
	next, err := randomSecret(32)
	if err != nil {
		return Session{}, err
	}
	u, err := s.store.RotateRefreshToken(ctx, HashSecret(in.RefreshToken), func(userID int64, family string) RefreshToken {
		return RefreshToken{Hash: HashSecret(next), FamilyID: family, UserID: userID, ExpiresAt: s.now().Add(s.cfg.RefreshTTL)}
	})
	if err != nil {
		return Session{}, err
	}
	return s.session(ctx, u, next)
}

// Logout revokes the token's family. Unknown tokens succeed too: logging out
// is idempotent and reveals nothing.
func (s *Service) Logout(ctx context.Context, in RefreshInput) error {
	if err := in.check(); err != nil {
		if errors.Is(err, ErrInvalidRefresh) {
			return nil
		}
		return err
	}
	return s.store.RevokeFamily(ctx, HashSecret(in.RefreshToken))
}

// Me returns the caller's account; a deactivated account is refused even
// while its access token is still valid.
func (s *Service) Me(ctx context.Context, id int64) (User, error) {
	u, err := s.store.UserByID(ctx, id)
	if errors.Is(err, ErrUserNotFound) {
		return User{}, ErrInactive
	}
	if err != nil {
		return User{}, err
	}
	if !u.Active {
		return User{}, ErrInactive
	}
	return u, nil
}

// UserInput is the body of POST /users.
type UserInput struct {
	Name     string `json:"name"`
	Email    string `json:"email"`
	Password string `json:"password"`
	Role     string `json:"role"`
	TeamID   *int64 `json:"team_id"`
	// EditScope is company (default), team or own.
	EditScope string `json:"edit_scope"`
}

func checkPassword(v *validate.Errors, pw string) {
	switch n := len([]rune(pw)); {
	case n < MinPasswordLength:
		v.Add("password", "must be at least %d characters", MinPasswordLength)
	case len(pw) > MaxPasswordLength:
		v.Add("password", "must be at most %d bytes", MaxPasswordLength)
	}
}

func checkName(v *validate.Errors, name string) {
	if v.Required("name", name) {
		v.MaxLen("name", name, validate.MaxName)
	}
}

func checkNameEmail(v *validate.Errors, name, email string) {
	checkName(v, name)
	if v.Required("email", email) {
		v.Email("email", email)
	}
}

// check trims and defaults in, then validates it.
func (in *UserInput) check() error {
	in.Name, in.Email = strings.TrimSpace(in.Name), strings.TrimSpace(in.Email)
	if in.Role == "" {
		in.Role = auth.RoleUser
	}
	if in.EditScope == "" {
		in.EditScope = directory.ScopeCompany
	}
	var v validate.Errors
	checkNameEmail(&v, in.Name, in.Email)
	checkPassword(&v, in.Password)
	v.OneOf("role", in.Role, auth.RoleAdmin, auth.RoleUser)
	v.OneOf("edit_scope", in.EditScope, directory.ScopeCompany, directory.ScopeTeam, directory.ScopeOwn)
	if in.TeamID != nil {
		v.Positive("team_id", *in.TeamID)
	}
	return v.Err()
}

// newUser hashes the password of a checked input.
func (s *Service) newUser(ctx context.Context, in UserInput) (NewUser, error) {
	hash, err := s.hasher.Hash(ctx, in.Password)
	if err != nil {
		return NewUser{}, err
	}
	return NewUser{Name: in.Name, Email: in.Email, PasswordHash: hash, Role: in.Role, TeamID: in.TeamID, EditScope: in.EditScope}, nil
}

// CreateUser validates and stores a new account.
func (s *Service) CreateUser(ctx context.Context, in UserInput) (User, error) {
	if err := in.check(); err != nil {
		return User{}, err
	}
	u, err := s.newUser(ctx, in)
	if err != nil {
		return User{}, err
	}
	return s.store.CreateUser(ctx, u)
}

// UserUpdate is the body of PUT /users/{id}: name and email are required;
// absent optional fields keep their value, team_id null clears the team,
// and a password, when given, replaces the old one.
type UserUpdate struct {
	Name     string              `json:"name"`
	Email    string              `json:"email"`
	Password patch.Field[string] `json:"password"`
	Role     patch.Field[string] `json:"role"`
	TeamID   patch.Field[int64]  `json:"team_id"`
	Active   patch.Field[bool]   `json:"active"`
	// EditScope, when given, replaces the scope; null or "" keeps it.
	EditScope patch.Field[string] `json:"edit_scope"`
}

// UpdateUser validates and applies an update.
func (s *Service) UpdateUser(ctx context.Context, id int64, in UserUpdate) (User, error) {
	in.Name, in.Email = strings.TrimSpace(in.Name), strings.TrimSpace(in.Email)
	var v validate.Errors
	checkNameEmail(&v, in.Name, in.Email)
	pw := in.Password.Ptr()
	if pw != nil && *pw == "" {
		pw = nil
	}
	if pw != nil {
		checkPassword(&v, *pw)
	}
	role := in.Role.Ptr()
	if role != nil && *role == "" {
		role = nil
	}
	if role != nil {
		v.OneOf("role", *role, auth.RoleAdmin, auth.RoleUser)
	}
	if t := in.TeamID.Ptr(); t != nil {
		v.Positive("team_id", *t)
	}
	if in.Active.Set && in.Active.Null {
		v.Add("active", "must be true or false")
	}
	scope := in.EditScope.Ptr()
	if scope != nil && *scope == "" {
		scope = nil
	}
	if scope != nil {
		v.OneOf("edit_scope", *scope, directory.ScopeCompany, directory.ScopeTeam, directory.ScopeOwn)
	}
	if err := v.Err(); err != nil {
		return User{}, err
	}
	change := UserChange{Name: &in.Name, Email: &in.Email, Role: role, TeamSet: in.TeamID.Set,
		TeamID: in.TeamID.Ptr(), Active: in.Active.Ptr(), EditScope: scope}
	if pw != nil {
		hash, err := s.hasher.Hash(ctx, *pw)
		if err != nil {
			return User{}, err
		}
		change.PasswordHash = &hash
	}
	return s.store.UpdateUser(ctx, id, change)
}

// DeactivateUser is DELETE /users/{id}: the account stays (records remain
// assigned to it) but can no longer log in or refresh.
func (s *Service) DeactivateUser(ctx context.Context, id int64) (User, error) {
	inactive := false
	return s.store.UpdateUser(ctx, id, UserChange{Active: &inactive})
}

// ListUsers pages through accounts.
func (s *Service) ListUsers(ctx context.Context, f UserFilter) ([]User, int, error) {
	return s.store.ListUsers(ctx, f)
}

// User returns one account.
func (s *Service) User(ctx context.Context, id int64) (User, error) { return s.store.UserByID(ctx, id) }

// Directory is the snapshot other contexts load at start-up.
func (s *Service) Directory(ctx context.Context) ([]User, error) { return s.store.AllUsers(ctx) }

// BootstrapAdmin creates the first admin when no user exists yet.
func (s *Service) BootstrapAdmin(ctx context.Context, email, password string) (User, bool, error) {
	in := UserInput{Name: "Administrator", Email: email, Password: password, Role: auth.RoleAdmin}
	if err := in.check(); err != nil {
		return User{}, false, fmt.Errorf("bootstrap admin: %w", err)
	}
	u, err := s.newUser(ctx, in)
	if err != nil {
		return User{}, false, err
	}
	return s.store.BootstrapAdmin(ctx, u)
}

// TeamInput is the body of POST and PUT /teams.
type TeamInput struct {
	Name string `json:"name"`
}

func (in *TeamInput) check() error {
	in.Name = strings.TrimSpace(in.Name)
	var v validate.Errors
	checkName(&v, in.Name)
	return v.Err()
}

// CreateTeam validates and stores a team.
func (s *Service) CreateTeam(ctx context.Context, in TeamInput) (Team, error) {
	if err := in.check(); err != nil {
		return Team{}, err
	}
	return s.store.CreateTeam(ctx, in.Name)
}

// UpdateTeam renames a team.
func (s *Service) UpdateTeam(ctx context.Context, id int64, in TeamInput) (Team, error) {
	if err := in.check(); err != nil {
		return Team{}, err
	}
	return s.store.UpdateTeam(ctx, id, in.Name)
}

// Teams lists every team.
func (s *Service) Teams(ctx context.Context) ([]Team, error) { return s.store.ListTeams(ctx) }

// Team returns one team.
func (s *Service) Team(ctx context.Context, id int64) (Team, error) { return s.store.TeamByID(ctx, id) }

// DeleteTeam deletes a team and unassigns its members.
func (s *Service) DeleteTeam(ctx context.Context, id int64) error { return s.store.DeleteTeam(ctx, id) }

// Limits of API key settings.
const (
	DefaultKeyRateLimit = 60
	MaxKeyRateLimit     = 100_000
	MaxAllowedOrigins   = 50
)

// APIKeyInput is the body of POST /api-keys.
type APIKeyInput struct {
	Name               string   `json:"name"`
	RateLimitPerMinute *int     `json:"rate_limit_per_minute"`
	AllowedOrigins     []string `json:"allowed_origins"`
}

// CreateAPIKey stores a new key and returns it with its secret, which is
// never retrievable again.
func (s *Service) CreateAPIKey(ctx context.Context, in APIKeyInput, createdBy int64) (APIKey, string, error) {
	in.Name = strings.TrimSpace(in.Name)
	var v validate.Errors
	checkName(&v, in.Name)
	limit := DefaultKeyRateLimit
	if in.RateLimitPerMinute != nil {
		limit = *in.RateLimitPerMinute
		if limit < 1 || limit > MaxKeyRateLimit {
			v.Add("rate_limit_per_minute", "must be between 1 and %d", MaxKeyRateLimit)
		}
	}
	origins := []string{}
	if len(in.AllowedOrigins) > MaxAllowedOrigins {
		v.Add("allowed_origins", "must hold at most %d origins", MaxAllowedOrigins)
	} else {
		for _, o := range in.AllowedOrigins {
			norm, ok := normalizeOrigin(o)
			if !ok {
				v.Add("allowed_origins", "%q is not an origin such as https://example.com", o)
				break
			}
			origins = append(origins, norm)
		}
	}
	if err := v.Err(); err != nil {
		return APIKey{}, "", err
	}
	secret, prefix, hash, err := newAPIKeySecret()
	if err != nil {
		return APIKey{}, "", err
	}
	var by *int64
	if createdBy > 0 {
		by = &createdBy
	}
	k, err := s.store.CreateAPIKey(ctx, NewAPIKey{Name: in.Name, Prefix: prefix, Hash: hash,
		RateLimitPerMinute: limit, AllowedOrigins: origins, CreatedBy: by})
	return k, secret, err
}

// normalizeOrigin accepts scheme://host[:port] (lower-cased, no path).
func normalizeOrigin(o string) (string, bool) {
	o = strings.TrimSpace(o)
	if len(o) > validate.MaxString {
		return "", false
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", false
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), true
}

// APIKeys lists keys without secrets.
func (s *Service) APIKeys(ctx context.Context) ([]APIKey, error) { return s.store.ListAPIKeys(ctx) }

// RevokeAPIKey revokes a key.
func (s *Service) RevokeAPIKey(ctx context.Context, id int64) error {
	return s.store.RevokeAPIKey(ctx, id)
}

// VerifyAPIKey returns the active key matching secret, or ErrInvalidAPIKey.
func (s *Service) VerifyAPIKey(ctx context.Context, secret string) (APIKey, error) {
	if !plausibleAPIKey(secret) {
		return APIKey{}, ErrInvalidAPIKey
	}
	want := HashSecret(secret)
	k, stored, err := s.store.ActiveAPIKeyByHash(ctx, want)
	if errors.Is(err, ErrAPIKeyNotFound) {
		return APIKey{}, ErrInvalidAPIKey
	}
	if err != nil {
		return APIKey{}, err
	}
	if subtle.ConstantTimeCompare(stored, want) != 1 {
		return APIKey{}, ErrInvalidAPIKey
	}
	return k, nil
}

// RotateKeys makes a new signing key active.
func (s *Service) RotateKeys(ctx context.Context) (string, error) {
	return s.keys.Rotate(ctx)
}
