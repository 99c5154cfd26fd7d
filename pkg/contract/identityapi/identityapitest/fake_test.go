package identityapitest_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/identityapi/identityapitest"
)

const secret = "test-internal-secret-0123456789"

type fakeBackend struct {
	f        *identityapitest.Fake
	c, wrong *identityapi.Client
	n        int
}

func (b *fakeBackend) Client() *identityapi.Client   { return b.c }
func (b *fakeBackend) Stranger() *identityapi.Client { return b.wrong }

func (b *fakeBackend) CreateUser(_ testing.TB, name, email, role string) identityapi.DirectoryUser {
	return b.f.AddUser(identityapi.DirectoryUser{Name: name, Email: email, Role: role, Active: true})
}

func (b *fakeBackend) CreateKey(_ testing.TB, name string, origins []string) (string, identityapi.VerifiedKey) {
	b.n++
	s := "crm_live_fake" + string(rune('a'+b.n)) + "0123456789abcdef"
	return s, b.f.AddKey(s, identityapi.VerifiedKey{Name: name, AllowedOrigins: origins})
}

func (b *fakeBackend) RevokeKey(_ testing.TB, s string, _ identityapi.VerifiedKey) { b.f.RevokeKey(s) }

func (b *fakeBackend) CreateAccessToken(_ testing.TB, _, role string, scopes []string) (string, int64) {
	b.n++
	s := identityapi.AccessTokenPrefix + "fake" + string(rune('a'+b.n)) + "0123456789abcdefghijklmnopqrstuvwxyzABC"
	return s, b.f.AddAccessToken(s, identityapi.VerifiedAccessToken{Role: role, Scopes: scopes}).ID
}

func (b *fakeBackend) RevokeAccessToken(_ testing.TB, s string, _ int64) { b.f.RevokeAccessToken(s) }

func TestFakeKeepsTheContract(t *testing.T) {
	t.Parallel()
	f := identityapitest.NewFake(secret)
	srv, c := f.Start(t)
	identityapitest.Run(t, &fakeBackend{f: f, c: c, wrong: identityapi.New(srv.URL, "wrong-secret-wrong-secret")})
}
