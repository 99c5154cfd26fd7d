// Package identity is the core of the identity context: users, teams,
// sessions (access and refresh tokens), signing keys and API keys. It holds
// the domain types, the rules, and the small interfaces storage implements;
// it knows neither HTTP nor SQL. The records it answers and the inputs it
// takes are identityapi's wire types, so the edge encodes and decodes them
// as they are, and a field is added in one struct.
package identity

import (
	"context"
	"crypto/ed25519"
	"time"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/list"
)

// User is an account. The password hash never leaves the store except
// through Credentials.
type User = identityapi.User

// DirectoryEntry is the user as published to other contexts.
func DirectoryEntry(u User) directory.User {
	return directory.User{ID: u.ID, Name: u.Name, Email: u.Email, Role: u.Role, TeamID: u.TeamID,
		Active: u.Active, EditScope: u.EditScope, UpdatedAt: u.UpdatedAt.Time}
}

// Credentials is a user together with the stored password hash, for login.
type Credentials struct {
	User         User
	PasswordHash string
}

// NewUser is a user to insert; the password is already hashed.
type NewUser struct {
	Name         string
	Email        string
	PasswordHash string
	Role         string
	TeamID       *int64
	EditScope    string
}

// UserChange is applied to a stored user under a row lock. Nil fields keep
// their value; TeamSet with a nil TeamID clears the team.
type UserChange struct {
	Name         *string
	Email        *string
	PasswordHash *string
	Role         *string
	TeamSet      bool
	TeamID       *int64
	Active       *bool
	EditScope    *string
}

// UserFilter narrows the user list: the page, search, sort and creation
// dates every list shares, and the user list's own filters (nil or "" is
// no filter).
type UserFilter struct {
	list.Query
	Role   string
	TeamID *int64
	Active *bool
}

// UserSorts are the user list's sort keys; the store maps each to its SQL
// expression, so input never becomes SQL text.
var UserSorts = []string{"name", "email", "role", "created_at", "updated_at"}

// DefaultUserSort sorts the user list when the caller names no key.
const DefaultUserSort = "name"

// Team groups users (scope=team in other contexts).
type Team = identityapi.Team

// TeamEvent is the team as published to other contexts.
func TeamEvent(t Team) directory.TeamEvent {
	return directory.TeamEvent{ID: t.ID, Name: t.Name, UpdatedAt: t.UpdatedAt.Time}
}

// APIKey is a key for the public intake API. The secret is shown once at
// creation (Key, set by the edge) and stored only as a SHA-256 hash.
type APIKey = identityapi.APIKey

// NewAPIKey is a key to insert.
type NewAPIKey struct {
	Name               string
	Prefix             string
	Hash               []byte
	RateLimitPerMinute int
	AllowedOrigins     []string
	CreatedBy          *int64
}

// RefreshToken is one stored refresh token (hash only).
type RefreshToken struct {
	Hash      []byte
	FamilyID  string
	UserID    int64
	ExpiresAt time.Time
}

// StoredKey is a signing key as persisted: the private key possibly
// encrypted (see Sealer).
type StoredKey struct {
	Kid        string
	Public     ed25519.PublicKey
	Private    []byte
	Encryption string
	CreatedAt  time.Time
	RetiredAt  *time.Time
}

// Users stores accounts. Every write also records the user.* event in the
// same transaction.
type Users interface {
	CredentialsByEmail(ctx context.Context, email string) (Credentials, error)
	UserByID(ctx context.Context, id int64) (User, error)
	ListUsers(ctx context.Context, f UserFilter) ([]User, int, error)
	AllUsers(ctx context.Context) ([]User, error)
	CreateUser(ctx context.Context, u NewUser) (User, error)
	// UpdateUser applies change to the locked row. It refuses with
	// ErrLastAdmin a change that would leave no active admin, and revokes
	// the user's refresh tokens when the password changes or the user is
	// deactivated.
	UpdateUser(ctx context.Context, id int64, change UserChange) (User, error)
	// BootstrapAdmin creates u unless any user exists, race-safe across
	// replicas; it reports whether it created one.
	BootstrapAdmin(ctx context.Context, u NewUser) (User, bool, error)
}

// Teams stores teams; writes record team.* (and user.updated when
// members are unassigned) events.
type Teams interface {
	ListTeams(ctx context.Context) ([]Team, error)
	TeamByID(ctx context.Context, id int64) (Team, error)
	CreateTeam(ctx context.Context, name string) (Team, error)
	UpdateTeam(ctx context.Context, id int64, name string) (Team, error)
	DeleteTeam(ctx context.Context, id int64) error
}

// Sessions stores refresh tokens. Like UpdateUser, which revokes a user's
// tokens, they lock the user's row before any token row, so sessions and
// account changes serialise instead of deadlocking, and a change never
// misses a token being stored meanwhile.
type Sessions interface {
	// StartSession stores t, the first token of a new family, for the user
	// whose password was verified against verifiedHash, and returns the
	// user as stored now. It reads the user's row under a share lock (the
	// lock a password change or deactivation waits for) and refuses with
	// ErrInvalidCredentials when the account is gone, deactivated, or its
	// password changed since the check: such a change has committed and
	// will not revoke a token stored after it.
	StartSession(ctx context.Context, verifiedHash string, t RefreshToken) (User, error)
	// RotateRefreshToken atomically marks the token with oldHash rotated and
	// stores next in its family, returning the (active) user. A token that
	// was already rotated revokes its family. Every failure is
	// ErrInvalidRefresh.
	RotateRefreshToken(ctx context.Context, oldHash []byte, next func(userID int64, familyID string) RefreshToken) (User, error)
	// RevokeFamily revokes the family of the token with hash; unknown
	// tokens are ignored.
	RevokeFamily(ctx context.Context, hash []byte) error
}

// APIKeys stores API keys.
type APIKeys interface {
	CreateAPIKey(ctx context.Context, k NewAPIKey) (APIKey, error)
	ListAPIKeys(ctx context.Context) ([]APIKey, error)
	RevokeAPIKey(ctx context.Context, id int64) error
	// ActiveAPIKeyByHash finds an unrevoked key and its stored hash.
	ActiveAPIKeyByHash(ctx context.Context, hash []byte) (APIKey, []byte, error)
}

// SigningKeys stores Ed25519 keys.
type SigningKeys interface {
	// PublishedKeys returns the active key and the retired keys still in
	// their grace period, newest first.
	PublishedKeys(ctx context.Context, p KeyPolicy) ([]StoredKey, error)
	// EnsureActiveKey inserts k as the active key unless one exists (under
	// a lock, so replicas starting together create one key).
	EnsureActiveKey(ctx context.Context, k StoredKey) error
	// RotateKey retires the active key and makes k the active one.
	RotateKey(ctx context.Context, k StoredKey) error
}

// Store is every storage port of the context.
type Store interface {
	Users
	Teams
	Sessions
	APIKeys
	AccessTokens
	SigningKeys
	AuditLog
}

// Throttle counts login attempts under opaque keys in fixed windows.
// Every attempt is counted before its password is checked, so concurrent
// attempts cannot all pass a check made before any of them failed; a
// success resets or takes back what it counted.
type Throttle interface {
	// Take counts one attempt under key and reports whether the count is
	// beyond limit and, if so, how long until the window starts over.
	Take(ctx context.Context, key string, limit int) (time.Duration, bool, error)
	// Reset forgets the attempts under key.
	Reset(ctx context.Context, key string) error
	// Forgive takes back one attempt under key.
	Forgive(ctx context.Context, key string) error
	// Remember marks key as known for ttl; Known reports it.
	Remember(ctx context.Context, key string, ttl time.Duration) error
	Known(ctx context.Context, key string) (bool, error)
}
