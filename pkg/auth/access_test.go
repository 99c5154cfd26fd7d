package auth_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/authtest"
	"github.com/opencrm/crm/pkg/problem"
)

// revocationsOn returns a verifier whose revocation list lives at a key of
// its own, and a function publishing that list.
func revocationsOn(t *testing.T, iss *authtest.Issuer) (*auth.Verifier, func([]auth.AccessChange)) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	t.Cleanup(func() { _ = rdb.Close() })
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	key := "test:access:" + hex.EncodeToString(b)
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	r, err := auth.NewRevocations(rdb, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	r.Key, r.MaxAge = key, 0 // every check rereads the list
	v, err := auth.NewVerifier(iss.Keys(), auth.Issuer, auth.Audience, auth.WithRevocations(r))
	if err != nil {
		t.Fatal(err)
	}
	return v, func(list []auth.AccessChange) {
		t.Helper()
		if err := auth.PublishAccessChanges(context.Background(), rdb, key, list); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRevocations(t *testing.T) {
	t.Parallel()
	now := time.Now()
	before := now.Add(-time.Minute)
	issuedAt := func(at time.Time) func(*auth.Claims) {
		return func(c *auth.Claims) { c.IssuedAt = jwt.NewNumericDate(at) }
	}
	admin := func(c *auth.Claims) { c.Role = auth.RoleAdmin }
	tests := map[string]struct {
		list     []auth.AccessChange
		mods     []func(*auth.Claims)
		wantRole string // "" means refused with 401
	}{
		"no change":                  {nil, nil, auth.RoleUser},
		"another user deactivated":   {[]auth.AccessChange{{UserID: 8, Role: auth.RoleUser}}, nil, auth.RoleUser},
		"deactivated":                {[]auth.AccessChange{{UserID: 7, Role: auth.RoleUser, RevokedAt: &now}}, nil, ""},
		"deactivated, token earlier": {[]auth.AccessChange{{UserID: 7, Role: auth.RoleUser, RevokedAt: &now}}, []func(*auth.Claims){issuedAt(before)}, ""},
		"reactivated, token from before": {[]auth.AccessChange{{UserID: 7, Active: true, Role: auth.RoleUser, RevokedAt: &now}},
			[]func(*auth.Claims){issuedAt(before)}, ""},
		"reactivated, new token":               {[]auth.AccessChange{{UserID: 7, Active: true, Role: auth.RoleUser, RevokedAt: &before}}, nil, auth.RoleUser},
		"demoted admin":                        {[]auth.AccessChange{{UserID: 7, Active: true, Role: auth.RoleUser}}, []func(*auth.Claims){admin}, auth.RoleUser},
		"re-promoted admin":                    {[]auth.AccessChange{{UserID: 7, Active: true, Role: auth.RoleAdmin}}, []func(*auth.Claims){admin}, auth.RoleAdmin},
		"promoted user keeps the token's role": {[]auth.AccessChange{{UserID: 7, Active: true, Role: auth.RoleAdmin}}, nil, auth.RoleUser},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			iss := authtest.New(t)
			v, publish := revocationsOn(t, iss)
			publish(tc.list)
			tok := iss.Sign(t, claims(func(c *auth.Claims) {
				for _, m := range tc.mods {
					m(c)
				}
			}))
			c, err := v.Verify(context.Background(), tok)
			if tc.wantRole == "" {
				if p := problem.From(err); p.Status != 401 || p.Code != "unauthenticated" || p.Detail != "access token revoked" {
					t.Fatalf("got %v, want 401 access token revoked", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantRole, c.Role); diff != "" {
				t.Errorf("role (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRevocationsFollowTheList shows a change published after the verifier
// cached the list is applied once the list is older than MaxAge.
func TestRevocationsFollowTheList(t *testing.T) {
	t.Parallel()
	iss := authtest.New(t)
	v, publish := revocationsOn(t, iss)
	tok := iss.Sign(t, claims(nil))
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	publish([]auth.AccessChange{{UserID: 7, Role: auth.RoleUser, RevokedAt: &now}})
	if _, err := v.Verify(context.Background(), tok); problem.From(err).Status != 401 {
		t.Fatalf("after deactivation: %v, want 401", err)
	}
	publish(nil)
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatalf("after the list emptied: %v", err)
	}
}

// TestRevocationsWithoutRedis keeps verifying (fail open on the last list)
// when Redis is unreachable.
func TestRevocationsWithoutRedis(t *testing.T) {
	t.Parallel()
	iss := authtest.New(t)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	r, err := auth.NewRevocations(rdb, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewVerifier(iss.Keys(), auth.Issuer, auth.Audience, auth.WithRevocations(r))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), iss.Sign(t, claims(nil))); err != nil {
		t.Fatalf("Redis down: %v, want the token accepted", err)
	}
}

// BenchmarkVerifyWithRevocations prices the revocation check against the
// signature check it follows (the physical cost of verifying a token):
// a map lookup under a mutex, and one Redis read per second.
func BenchmarkVerifyWithRevocations(b *testing.B) {
	iss := authtest.New(b)
	tok := iss.Sign(b, claims(nil))
	plain := iss.Verifier(b)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	b.Cleanup(func() { _ = rdb.Close() })
	key := "test:access:bench"
	b.Cleanup(func() { rdb.Del(context.Background(), key) })
	list := make([]auth.AccessChange, 100)
	for i := range list {
		list[i] = auth.AccessChange{UserID: int64(1000 + i), Role: auth.RoleUser}
	}
	if err := auth.PublishAccessChanges(context.Background(), rdb, key, list); err != nil {
		b.Fatal(err)
	}
	r, err := auth.NewRevocations(rdb, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	r.Key = key
	checked, err := auth.NewVerifier(iss.Keys(), auth.Issuer, auth.Audience, auth.WithRevocations(r))
	if err != nil {
		b.Fatal(err)
	}
	for name, v := range map[string]*auth.Verifier{"signature only": plain, "with revocations": checked} {
		b.Run(name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := v.Verify(context.Background(), tok); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
