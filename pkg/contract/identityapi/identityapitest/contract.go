package identityapitest

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/opencrm/crm/pkg/contract/identityapi"
)

// Backend is an identity the contract runs against: the Fake, or
// identity's real handlers over its database.
type Backend interface {
	// Client calls the backend with the right internal secret; Stranger
	// with a wrong one.
	Client() *identityapi.Client
	Stranger() *identityapi.Client
	// CreateUser stores an active user and returns its directory entry.
	CreateUser(t testing.TB, name, email, role string) identityapi.DirectoryUser
	// CreateKey issues an API key and returns its secret and record.
	CreateKey(t testing.TB, name string, origins []string) (string, identityapi.VerifiedKey)
	// RevokeKey revokes the key with that secret.
	RevokeKey(t testing.TB, secret string, k identityapi.VerifiedKey)
	// CreateAccessToken issues an integration token of role with scopes
	// and returns its secret and id.
	CreateAccessToken(t testing.TB, name, role string, scopes []string) (string, int64)
	// RevokeAccessToken revokes the integration token with that secret.
	RevokeAccessToken(t testing.TB, secret string, id int64)
}

// Run is identity's internal API contract. The fake runs it in its own
// test; identity runs it against its real handlers.
func Run(t *testing.T, b Backend) {
	ctx := context.Background()
	c := b.Client()
	ignoreTime := cmpopts.IgnoreFields(identityapi.DirectoryUser{}, "UpdatedAt")

	t.Run("users", func(t *testing.T) {
		u := b.CreateUser(t, "Grace Hopper", "grace-contract@example.com", "user")
		if !u.Active || u.ID <= 0 || u.Role != "user" || u.Email != "grace-contract@example.com" {
			t.Fatalf("created %+v", u)
		}
		got, err := c.User(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(u, got, ignoreTime); diff != "" {
			t.Errorf("User (-want +got):\n%s", diff)
		}
		all, err := c.Users(ctx)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, x := range all {
			found = found || cmp.Equal(u, x, ignoreTime)
		}
		if !found {
			t.Errorf("snapshot %+v lacks %+v", all, u)
		}
		if _, err := c.User(ctx, u.ID+1_000_000); !errors.Is(err, identityapi.ErrUserNotFound) {
			t.Errorf("unknown user: err = %v, want ErrUserNotFound", err)
		}
		if _, err := b.Stranger().User(ctx, u.ID); err == nil || errors.Is(err, identityapi.ErrUserNotFound) {
			t.Errorf("wrong secret: err = %v, want a refusal", err)
		}
	})

	t.Run("api keys", func(t *testing.T) {
		secret, k := b.CreateKey(t, "Website", []string{"https://example.com"})
		got, err := c.VerifyKey(ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		want := identityapi.VerifiedKey{ID: k.ID, Name: "Website", Prefix: secret[:12], RateLimitPerMinute: 60,
			AllowedOrigins: []string{"https://example.com"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("VerifyKey (-want +got):\n%s", diff)
		}
		for _, bad := range []string{secret + "x", "not-a-key"} {
			if _, err := c.VerifyKey(ctx, bad); !errors.Is(err, identityapi.ErrUnknownKey) {
				t.Errorf("VerifyKey(%q): err = %v, want ErrUnknownKey", bad, err)
			}
		}
		b.RevokeKey(t, secret, k)
		if _, err := c.VerifyKey(ctx, secret); !errors.Is(err, identityapi.ErrUnknownKey) {
			t.Errorf("revoked key: err = %v, want ErrUnknownKey", err)
		}
	})

	t.Run("access tokens", func(t *testing.T) {
		secret, id := b.CreateAccessToken(t, "Sync", "user", []string{"contacts:read", "leads:write"})
		if !identityapi.PlausibleAccessToken(secret) {
			t.Fatalf("issued token %q is not plausible", secret)
		}
		got, err := c.VerifyAccessToken(ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != id || got.UserID <= 0 || got.Role != "user" || got.AccessToken == "" || got.ExpiresIn <= 0 ||
			!cmp.Equal([]string{"contacts:read", "leads:write"}, got.Scopes) {
			t.Errorf("VerifyAccessToken = %+v", got)
		}
		for _, bad := range []string{secret + "x", identityapi.AccessTokenPrefix + "unknown0123456789"} {
			if _, err := c.VerifyAccessToken(ctx, bad); !errors.Is(err, identityapi.ErrUnknownAccessToken) {
				t.Errorf("VerifyAccessToken(%q): err = %v, want ErrUnknownAccessToken", bad, err)
			}
		}
		if _, err := b.Stranger().VerifyAccessToken(ctx, secret); err == nil {
			t.Error("wrong secret: the token was verified")
		}
		b.RevokeAccessToken(t, secret, id)
		if _, err := c.VerifyAccessToken(ctx, secret); !errors.Is(err, identityapi.ErrUnknownAccessToken) {
			t.Errorf("revoked token: err = %v, want ErrUnknownAccessToken", err)
		}
	})
}
