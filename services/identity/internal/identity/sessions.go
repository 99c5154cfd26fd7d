package identity

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/validate"
)

// Session is what a login or refresh returns, as the API answers it.
type Session = identityapi.Session

// tokenType is the type of every session's access token (RFC 6750).
const tokenType = "Bearer"

// LoginInput is a login attempt: the body of Login, decoded into the
// contract's type.
type LoginInput = identityapi.LoginRequest

// Login checks the password and opens a session. Unknown email, wrong
// password and deactivated account all give the same error after the same
// argon2 work; attempts are throttled per (email, client IP), per email
// and per client IP (Limits). Each refused attempt whose password was
// checked is in the audit log (login.failed, with the client's address
// and user agent); a malformed email or a throttled attempt is not, so
// a flood of them cannot flood the log. A success is logged by
// StartSession, in its transaction.
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
	email := strings.TrimSpace(in.Email)
	creds, err := s.store.CredentialsByEmail(ctx, email)
	ok := false
	failed := FailedLogin{Email: email, Reason: FailedUnknownAccount}
	switch {
	case errors.Is(err, ErrUserNotFound):
		s.hasher.Burn(ctx, in.Password)
	case err != nil:
		return Session{}, err
	default:
		failed.UserID, failed.Reason = &creds.User.ID, FailedWrongPassword
		ok, err = s.hasher.Verify(ctx, in.Password, creds.PasswordHash)
		if err != nil {
			return Session{}, err
		}
		if ok && !creds.User.Active {
			failed.Reason = FailedInactive
		}
	}
	if !ok || !creds.User.Active {
		return Session{}, s.loginFailed(ctx, failed)
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
	if errors.Is(err, ErrInvalidCredentials) {
		failed.Reason = FailedChanged
		return Session{}, s.loginFailed(ctx, failed)
	}
	if err != nil {
		return Session{}, err
	}
	if s.cfg.Limits.enabled() {
		s.settle(ctx, keys, emailCounted)
	}
	return s.session(ctx, u, refresh)
}

// loginFailed records a refused login in the audit log and answers
// ErrInvalidCredentials, or the error of a log that cannot be written (a
// refused login is not answered as if it were recorded).
func (s *Service) loginFailed(ctx context.Context, f FailedLogin) error {
	if err := s.store.LoginFailed(ctx, f); err != nil {
		return err
	}
	return ErrInvalidCredentials
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
	return Session{AccessToken: tok, TokenType: tokenType, ExpiresIn: int(s.cfg.AccessTTL / time.Second), RefreshToken: refresh, User: u}, nil
}

// RefreshInput names the refresh token to rotate or to log out: the body
// of Refresh and Logout, decoded into the contract's type.
type RefreshInput = identityapi.RefreshRequest

func checkRefreshInput(in RefreshInput) error {
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
	if err := checkRefreshInput(in); err != nil {
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
	if err := checkRefreshInput(in); err != nil {
		if errors.Is(err, ErrInvalidRefresh) {
			return nil
		}
		return err
	}
	return s.store.RevokeFamily(ctx, HashSecret(in.RefreshToken))
}
