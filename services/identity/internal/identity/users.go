package identity

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/validate"
)

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

// ErrNotAdmin refuses an admin action to an account that is not an admin.
var ErrNotAdmin = fault.Forbidden("this action requires the admin role")

// CurrentAdmin returns the caller's account while it is an active admin.
// Identity owns the accounts, so its admin actions follow the stored
// account rather than the role claim of an access token that is still
// valid: an admin who is deactivated (ErrInactive) or demoted (ErrNotAdmin)
// loses them at once.
func (s *Service) CurrentAdmin(ctx context.Context, id int64) (User, error) {
	u, err := s.Me(ctx, id)
	if err != nil {
		return User{}, err
	}
	if u.Role != auth.RoleAdmin {
		return User{}, ErrNotAdmin
	}
	return u, nil
}

// UserInput is an account to create: the body of CreateUser, decoded
// into the contract's type. Empty role and edit scope default to user and
// company.
type UserInput = identityapi.UserInput

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

// checkUserInput trims and defaults in, then validates it.
func checkUserInput(in *UserInput) error {
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
	if err := checkUserInput(&in); err != nil {
		return User{}, err
	}
	u, err := s.newUser(ctx, in)
	if err != nil {
		return User{}, err
	}
	return s.store.CreateUser(ctx, u)
}

// UserUpdate replaces an account's settings: name and email are required;
// absent optional fields keep their value, team_id null clears the team,
// a password, when given, replaces the old one, and an edit scope null or
// "" keeps it. It is the body of UpdateUser, decoded into the contract's
// type.
type UserUpdate = identityapi.UserUpdate

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

// DeactivateUser retires an account: it stays (records remain assigned
// to it) but can no longer log in or refresh.
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
	if err := checkUserInput(&in); err != nil {
		return User{}, false, fmt.Errorf("bootstrap admin: %w", err)
	}
	u, err := s.newUser(ctx, in)
	if err != nil {
		return User{}, false, err
	}
	return s.store.BootstrapAdmin(ctx, u)
}
