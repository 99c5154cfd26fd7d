package api_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/identityapi/identityapitest"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

// realIdentity is identityapitest's Backend over identity's own handlers
// and database: the fake other contexts test against passes these cases
// too, so it answers as identity does.
type realIdentity struct {
	e        *env
	c, wrong *identityapi.Client
}

func (b *realIdentity) Client() *identityapi.Client   { return b.c }
func (b *realIdentity) Stranger() *identityapi.Client { return b.wrong }

func (b *realIdentity) CreateUser(t testing.TB, name, email, role string) identityapi.DirectoryUser {
	t.Helper()
	u, err := b.e.svc.CreateUser(context.Background(), identity.UserInput{Name: name, Email: email, Password: "contract-password-1", Role: role})
	if err != nil {
		t.Fatal(err)
	}
	return identity.DirectoryEntry(u)
}

func (b *realIdentity) CreateKey(t testing.TB, name string, origins []string) (string, identityapi.VerifiedKey) {
	t.Helper()
	k, secret, err := b.e.svc.CreateAPIKey(context.Background(), identity.APIKeyInput{Name: name, AllowedOrigins: origins}, b.e.adminID)
	if err != nil {
		t.Fatal(err)
	}
	return secret, identityapi.VerifiedKey{ID: k.ID, Name: k.Name, Prefix: k.Prefix}
}

func (b *realIdentity) RevokeKey(t testing.TB, _ string, k identityapi.VerifiedKey) {
	t.Helper()
	if err := b.e.svc.RevokeAPIKey(context.Background(), k.ID); err != nil {
		t.Fatal(err)
	}
}

func (b *realIdentity) CreateAccessToken(t testing.TB, name, role string, scopes []string) (string, int64) {
	t.Helper()
	admin := &auth.Claims{Role: auth.RoleAdmin, RegisteredClaims: jwt.RegisteredClaims{Subject: strconv.FormatInt(b.e.adminID, 10)}}
	tok, secret, err := b.e.svc.CreateAccessToken(context.Background(), identity.AccessTokenInput{Name: name, Role: role, Scopes: scopes}, admin)
	if err != nil {
		t.Fatal(err)
	}
	return secret, tok.ID
}

func (b *realIdentity) RevokeAccessToken(t testing.TB, _ string, id int64) {
	t.Helper()
	if err := b.e.svc.RevokeAccessToken(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

func TestInternalAPIKeepsTheContract(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	identityapitest.Run(t, &realIdentity{e: e, c: identityapi.New(srv.URL, internalSecret),
		wrong: identityapi.New(srv.URL, "wrong-secret-wrong-secret")})
}
