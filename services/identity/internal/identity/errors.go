package identity

import "github.com/opencrm/crm/pkg/fault"

// Client-facing errors of the context. They are faults (a kind, a code and
// a detail, no status): the edge maps each kind to its status in one place
// (pkg/problem); storage wraps driver errors and returns these for the
// cases a client can cause.
var (
	// ErrInvalidCredentials is the one answer to a failed login, whether the
	// email is unknown, the password wrong or the account deactivated, so a
	// caller cannot probe which emails exist.
	ErrInvalidCredentials = fault.Unauthenticated("invalid email or password")
	// ErrInvalidRefresh is the one answer to an unusable refresh token.
	ErrInvalidRefresh = fault.Unauthenticated("invalid or expired refresh token")
	// ErrInactive is an access token of a user deactivated since it was issued.
	ErrInactive       = fault.Unauthenticated("account is deactivated")
	ErrUserNotFound   = fault.NotFound("user")
	ErrTeamNotFound   = fault.NotFound("team")
	ErrAPIKeyNotFound = fault.NotFound("api key")
	ErrEmailTaken     = fault.Conflict("conflict", "a user with this email already exists")
	ErrTeamNameTaken  = fault.Conflict("conflict", "a team with this name already exists")
	// ErrLastAdmin keeps at least one active admin, so the platform can
	// always be administered.
	ErrLastAdmin = fault.Conflict("conflict", "the last active admin cannot be demoted or deactivated")
	// ErrInvalidAPIKey is the one answer to an unknown or revoked key.
	ErrInvalidAPIKey = fault.Unauthenticated("invalid api key")
)
