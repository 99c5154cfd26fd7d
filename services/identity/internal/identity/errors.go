package identity

import "github.com/opencrm/crm/pkg/problem"

// Client-facing errors of the context. They are problem errors, so handlers
// write them as they are; storage wraps driver errors and returns these for
// the cases a client can cause.
var (
	// ErrInvalidCredentials is the one answer to a failed login, whether the
	// email is unknown, the password wrong or the account deactivated, so a
	// caller cannot probe which emails exist.
	ErrInvalidCredentials = problem.Unauthenticated("invalid email or password")
	// ErrInvalidRefresh is the one answer to an unusable refresh token.
	ErrInvalidRefresh = problem.Unauthenticated("invalid or expired refresh token")
	// ErrInactive is an access token of a user deactivated since it was issued.
	ErrInactive       = problem.Unauthenticated("account is deactivated")
	ErrUserNotFound   = problem.NotFound("user")
	ErrTeamNotFound   = problem.NotFound("team")
	ErrAPIKeyNotFound = problem.NotFound("api key")
	ErrEmailTaken     = problem.Conflict("conflict", "a user with this email already exists")
	ErrTeamNameTaken  = problem.Conflict("conflict", "a team with this name already exists")
	// ErrLastAdmin keeps at least one active admin, so the platform can
	// always be administered.
	ErrLastAdmin = problem.Conflict("conflict", "the last active admin cannot be demoted or deactivated")
	// ErrInvalidAPIKey is the one answer to an unknown or revoked key.
	ErrInvalidAPIKey = problem.Unauthenticated("invalid api key")
)
