package identity_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/services/identity/internal/identity"
	"github.com/opencrm/crm/services/identity/internal/store"
)

// The session rules on the service over its real store (a database cloned
// from the template), without a server.

const clientIP = "203.0.113.7"

// storedService is the service over a fresh database; login is not
// throttled.
func storedService(t *testing.T) *identity.Service {
	t.Helper()
	ctx := context.Background()
	st := store.New(newDB(t))
	sealer, err := identity.NewSealer("")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := identity.NewKeyring(ctx, st, sealer, identity.PolicyFor(15*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	hasher, err := identity.NewHasher(identity.Argon2Params{MemoryKiB: 64, Iterations: 1, Parallelism: 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	throttle := &fakeThrottle{count: map[string]int{}, known: map[string]bool{}}
	svc, err := identity.NewService(st, hasher, keys, throttle,
		identity.Config{AccessTTL: 15 * time.Minute, RefreshTTL: time.Hour},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// signUp creates a user and returns it with its first session.
func signUp(t *testing.T, svc *identity.Service, email, password string) (identity.User, identity.Session) {
	t.Helper()
	ctx := context.Background()
	u, err := svc.CreateUser(ctx, identity.UserInput{Name: "Rot", Email: email, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	s, err := svc.Login(ctx, identity.LoginInput{Email: email, Password: password}, clientIP)
	if err != nil {
		t.Fatal(err)
	}
	return u, s
}

// wantRefused checks err is the one answer to an unusable refresh token.
func wantRefused(t *testing.T, what string, err error) {
	t.Helper()
	if diff := cmp.Diff(identity.ErrInvalidRefresh.Error(), errString(err)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestRefreshRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := storedService(t)
	u, first := signUp(t, svc, "rot@example.com", "rot-password-1")

	second, err := svc.Refresh(ctx, identity.RefreshInput{RefreshToken: first.RefreshToken})
	if err != nil {
		t.Fatal(err)
	}
	if second.RefreshToken == first.RefreshToken || second.AccessToken == "" || second.User.ID != u.ID {
		t.Fatalf("refresh did not rotate: %+v", second)
	}
	third, err := svc.Refresh(ctx, identity.RefreshInput{RefreshToken: second.RefreshToken})
	if err != nil {
		t.Fatal(err)
	}

	// Replaying a spent token revokes the family: the newest token dies too.
	_, err = svc.Refresh(ctx, identity.RefreshInput{RefreshToken: first.RefreshToken})
	wantRefused(t, "replayed spent token", err)
	_, err = svc.Refresh(ctx, identity.RefreshInput{RefreshToken: third.RefreshToken})
	wantRefused(t, "newest token of a revoked family", err)

	// Another session of the same user is untouched.
	other, err := svc.Login(ctx, identity.LoginInput{Email: u.Email, Password: "rot-password-1"}, clientIP)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Refresh(ctx, identity.RefreshInput{RefreshToken: other.RefreshToken}); err != nil {
		t.Errorf("other session: %v", err)
	}
}

func TestLogoutRevokesTheFamily(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := storedService(t)
	_, s := signUp(t, svc, "out@example.com", "out-password-1")
	r, err := svc.Refresh(ctx, identity.RefreshInput{RefreshToken: s.RefreshToken})
	if err != nil {
		t.Fatal(err)
	}
	in := identity.RefreshInput{RefreshToken: r.RefreshToken}
	if err := svc.Logout(ctx, in); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Refresh(ctx, in)
	wantRefused(t, "refresh after logout", err)
	// Idempotent, and silent about unknown tokens.
	for name, in := range map[string]identity.RefreshInput{"again": in, "unknown": {RefreshToken: "unknown"}} {
		if err := svc.Logout(ctx, in); err != nil {
			t.Errorf("logout %s: %v", name, err)
		}
	}
}

func TestDeactivatedUserCannotLoginOrRefresh(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := storedService(t)
	u, s := signUp(t, svc, "deact@example.com", "deact-password-1")
	if _, err := svc.DeactivateUser(ctx, u.ID); err != nil {
		t.Fatal(err)
	}

	login := identity.LoginInput{Email: u.Email, Password: "deact-password-1"}
	if _, err := svc.Login(ctx, login, clientIP); !errors.Is(err, identity.ErrInvalidCredentials) || err.Error() != identity.ErrInvalidCredentials.Error() {
		t.Errorf("login of a deactivated user: %v, want %v", err, identity.ErrInvalidCredentials)
	}
	_, err := svc.Refresh(ctx, identity.RefreshInput{RefreshToken: s.RefreshToken})
	wantRefused(t, "refresh of a deactivated user", err)

	// Reactivated, the user logs in again, but old sessions stay dead.
	if _, err := svc.UpdateUser(ctx, u.ID, identity.UserUpdate{Name: u.Name, Email: u.Email,
		Active: patch.Field[bool]{Set: true, Value: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Login(ctx, login, clientIP); err != nil {
		t.Errorf("login after reactivation: %v", err)
	}
	_, err = svc.Refresh(ctx, identity.RefreshInput{RefreshToken: s.RefreshToken})
	wantRefused(t, "old session after reactivation", err)
}
