package identity_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

// The rules of the context, checked on the service without a server or a
// database: each case is refused before storage, which the fake store
// would fail loudly (a nil interface) if a rule let it through.

// fakeStore answers a login lookup with "no such user" and reads users
// from a map; every other call reaches the nil Store and panics.
type fakeStore struct {
	identity.Store
	users map[int64]identity.User
}

func (f fakeStore) UserByID(_ context.Context, id int64) (identity.User, error) {
	if u, ok := f.users[id]; ok {
		return u, nil
	}
	return identity.User{}, identity.ErrUserNotFound
}

func (fakeStore) CredentialsByEmail(context.Context, string) (identity.Credentials, error) {
	return identity.Credentials{}, identity.ErrUserNotFound
}

// LoginFailed records nothing: the rules tests check answers, the audit
// log has its own tests on PostgreSQL.
func (fakeStore) LoginFailed(context.Context, identity.FailedLogin) error { return nil }

// fakeKeys keeps signing keys in memory.
type fakeKeys struct {
	mu   sync.Mutex
	keys []identity.StoredKey
}

func (f *fakeKeys) PublishedKeys(context.Context, identity.KeyPolicy) ([]identity.StoredKey, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]identity.StoredKey(nil), f.keys...), nil
}

func (f *fakeKeys) EnsureActiveKey(_ context.Context, k identity.StoredKey) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.keys) == 0 {
		f.keys = append(f.keys, k)
	}
	return nil
}

func (f *fakeKeys) RotateKey(context.Context, identity.StoredKey) error {
	return errors.New("not used by these tests")
}

// fakeThrottle counts attempts in memory; a blocked key waits wait.
type fakeThrottle struct {
	mu    sync.Mutex
	wait  time.Duration
	count map[string]int
	known map[string]bool
}

func (f *fakeThrottle) Take(_ context.Context, key string, limit int) (time.Duration, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count[key]++
	if f.count[key] > limit {
		return f.wait, true, nil
	}
	return 0, false, nil
}

func (f *fakeThrottle) Reset(_ context.Context, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.count, key)
	return nil
}

func (f *fakeThrottle) Forgive(_ context.Context, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count[key]--
	return nil
}

func (f *fakeThrottle) Remember(_ context.Context, key string, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.known[key] = true
	return nil
}

func (f *fakeThrottle) Known(_ context.Context, key string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.known[key], nil
}

// newService is the service over the fakes, login limited by limits,
// with users stored.
func newService(t *testing.T, limits identity.Limits, wait time.Duration, users ...identity.User) *identity.Service {
	t.Helper()
	ctx := context.Background()
	sealer, err := identity.NewSealer("")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := identity.NewKeyring(ctx, &fakeKeys{}, sealer, identity.PolicyFor(15*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	hasher, err := identity.NewHasher(identity.Argon2Params{MemoryKiB: 64, Iterations: 1, Parallelism: 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	throttle := &fakeThrottle{wait: wait, count: map[string]int{}, known: map[string]bool{}}
	st := fakeStore{users: map[int64]identity.User{}}
	for _, u := range users {
		st.users[u.ID] = u
	}
	svc, err := identity.NewService(st, hasher, keys, throttle,
		identity.Config{AccessTTL: 15 * time.Minute, RefreshTTL: time.Hour, Limits: limits},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// refusal is what a client learns from a refused call: the kind (the
// edge's status), the code and the invalid fields.
type refusal struct {
	Kind   fault.Kind
	Code   string
	Fields []string
}

func refusalOf(err error) refusal {
	var f *fault.Error
	if !errors.As(err, &f) {
		return refusal{Kind: fault.KindInternal, Code: "not a fault: " + err.Error()}
	}
	r := refusal{Kind: f.Kind, Code: f.Code}
	for _, field := range f.Fields {
		r.Fields = append(r.Fields, field.Field)
	}
	return r
}

func invalid(fields ...string) refusal {
	return refusal{Kind: fault.KindInvalid, Code: "validation_failed", Fields: fields}
}

func TestCreateUserRules(t *testing.T) {
	t.Parallel()
	svc := newService(t, identity.Limits{}, 0)
	ok := identity.UserInput{Name: "New", Email: "new@example.com", Password: "new-password-1"}
	zero := int64(0)
	tests := []struct {
		name   string
		change func(*identity.UserInput)
		want   refusal
	}{
		{"weak password", func(in *identity.UserInput) { in.Password = "short-pw" }, invalid("password")},
		{"missing password", func(in *identity.UserInput) { in.Password = "" }, invalid("password")},
		{"password over 256 bytes", func(in *identity.UserInput) { in.Password = strings.Repeat("p", 257) }, invalid("password")},
		{"bad email", func(in *identity.UserInput) { in.Email = "not-an-email" }, invalid("email")},
		{"missing name", func(in *identity.UserInput) { in.Name = "" }, invalid("name")},
		{"blank name", func(in *identity.UserInput) { in.Name = "   " }, invalid("name")},
		{"long name", func(in *identity.UserInput) { in.Name = strings.Repeat("n", 101) }, invalid("name")},
		{"bad role", func(in *identity.UserInput) { in.Role = "root" }, invalid("role")},
		{"bad edit scope", func(in *identity.UserInput) { in.EditScope = "everything" }, invalid("edit_scope")},
		{"team id not positive", func(in *identity.UserInput) { in.TeamID = &zero }, invalid("team_id")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := ok
			tc.change(&in)
			_, err := svc.CreateUser(context.Background(), in)
			if diff := cmp.Diff(tc.want, refusalOf(err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestUpdateUserRules(t *testing.T) {
	t.Parallel()
	svc := newService(t, identity.Limits{}, 0)
	tests := []struct {
		name string
		in   identity.UserUpdate
		want refusal
	}{
		{"required fields", identity.UserUpdate{}, invalid("name", "email")},
		{"weak password", identity.UserUpdate{Name: "X", Email: "x@example.com",
			Password: patch.Field[string]{Set: true, Value: "short"}}, invalid("password")},
		{"active null", identity.UserUpdate{Name: "X", Email: "x@example.com",
			Active: patch.Field[bool]{Set: true, Null: true}}, invalid("active")},
		{"bad role", identity.UserUpdate{Name: "X", Email: "x@example.com",
			Role: patch.Field[string]{Set: true, Value: "root"}}, invalid("role")},
		{"bad edit scope", identity.UserUpdate{Name: "X", Email: "x@example.com",
			EditScope: patch.Field[string]{Set: true, Value: "everything"}}, invalid("edit_scope")},
		{"team id not positive", identity.UserUpdate{Name: "X", Email: "x@example.com",
			TeamID: patch.Field[int64]{Set: true, Value: -1}}, invalid("team_id")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := svc.UpdateUser(context.Background(), 1, tc.in)
			if diff := cmp.Diff(tc.want, refusalOf(err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTeamRules(t *testing.T) {
	t.Parallel()
	svc := newService(t, identity.Limits{}, 0)
	for name, in := range map[string]identity.TeamInput{
		"blank name": {Name: "  "},
		"long name":  {Name: strings.Repeat("x", 101)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, errCreate := svc.CreateTeam(context.Background(), in)
			_, errUpdate := svc.UpdateTeam(context.Background(), 1, in)
			for _, err := range []error{errCreate, errUpdate} {
				if diff := cmp.Diff(invalid("name"), refusalOf(err)); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestAPIKeyRules(t *testing.T) {
	t.Parallel()
	svc := newService(t, identity.Limits{}, 0)
	limit := func(n int) *int { return &n }
	tooMany := make([]string, identity.MaxAllowedOrigins+1)
	for i := range tooMany {
		tooMany[i] = "https://a" + strconv.Itoa(i) + ".example"
	}
	tests := []struct {
		name string
		in   identity.APIKeyInput
		want refusal
	}{
		{"missing name", identity.APIKeyInput{}, invalid("name")},
		{"rate limit zero", identity.APIKeyInput{Name: "a", RateLimitPerMinute: limit(0)}, invalid("rate_limit_per_minute")},
		{"rate limit too high", identity.APIKeyInput{Name: "a", RateLimitPerMinute: limit(100_001)}, invalid("rate_limit_per_minute")},
		{"origin with a path", identity.APIKeyInput{Name: "a", AllowedOrigins: []string{"https://a.example/path"}}, invalid("allowed_origins")},
		{"origin of another scheme", identity.APIKeyInput{Name: "a", AllowedOrigins: []string{"ftp://a.example"}}, invalid("allowed_origins")},
		{"origin with a user", identity.APIKeyInput{Name: "a", AllowedOrigins: []string{"https://u@a.example"}}, invalid("allowed_origins")},
		{"too many origins", identity.APIKeyInput{Name: "a", AllowedOrigins: tooMany}, invalid("allowed_origins")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := svc.CreateAPIKey(context.Background(), tc.in, 1)
			if diff := cmp.Diff(tc.want, refusalOf(err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestAccessTokenRules(t *testing.T) {
	t.Parallel()
	svc := newService(t, identity.Limits{}, 0)
	claims := func(role string, scopes ...string) *auth.Claims {
		return &auth.Claims{Role: role, Scopes: scopes, RegisteredClaims: jwt.RegisteredClaims{Subject: "1"}}
	}
	admin, user := claims(auth.RoleAdmin), claims(auth.RoleUser)
	past := time.Now().Add(-time.Hour)
	// In UTC a year-10000 timestamp, which the API's format cannot write.
	year10000 := time.Date(9999, 12, 31, 23, 59, 59, 0, time.FixedZone("", -(23*3600+59*60)))
	pastLastSecond := identity.MaxExpiry.Add(500 * time.Millisecond)
	read := []string{"leads:read"}
	forbidden := refusal{Kind: fault.KindForbidden, Code: "forbidden"}
	tests := []struct {
		name    string
		creator *auth.Claims
		in      identity.AccessTokenInput
		want    refusal
	}{
		{"unknown scope", admin, identity.AccessTokenInput{Name: "t", Scopes: []string{"contacts:delete"}}, invalid("scopes")},
		{"no scopes", admin, identity.AccessTokenInput{Name: "t", Scopes: []string{}}, invalid("scopes")},
		{"too many scopes", admin, identity.AccessTokenInput{Name: "t", Scopes: make([]string, identity.MaxTokenScopes+1)}, invalid("scopes")},
		{"admin scope with role user", admin, identity.AccessTokenInput{Name: "t", Scopes: []string{"admin"}}, invalid("scopes")},
		{"expiry in the past", admin, identity.AccessTokenInput{Name: "t", Scopes: read, ExpiresAt: &past}, invalid("expires_at")},
		{"expiry after year 9999", admin, identity.AccessTokenInput{Name: "t", Scopes: read, ExpiresAt: &year10000}, invalid("expires_at")},
		{"expiry past the last second", admin, identity.AccessTokenInput{Name: "t", Scopes: read, ExpiresAt: &pastLastSecond}, invalid("expires_at")},
		{"bad role", admin, identity.AccessTokenInput{Name: "t", Scopes: read, Role: "owner"}, invalid("role")},
		{"no name", admin, identity.AccessTokenInput{Scopes: read}, invalid("name")},
		{"non-admin", user, identity.AccessTokenInput{Name: "t", Scopes: read}, forbidden},
		{"no caller", nil, identity.AccessTokenInput{Name: "t", Scopes: read}, forbidden},
		{"admin token without the admin scope", claims(auth.RoleAdmin, "contacts:read"), identity.AccessTokenInput{Name: "t", Scopes: read}, forbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := svc.CreateAccessToken(context.Background(), tc.in, tc.creator)
			if diff := cmp.Diff(tc.want, refusalOf(err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoginRules(t *testing.T) {
	t.Parallel()
	svc := newService(t, identity.Limits{}, 0)
	wrong := refusal{Kind: fault.KindUnauthenticated, Code: "unauthenticated"}
	tests := []struct {
		name string
		in   identity.LoginInput
		want refusal
	}{
		{"missing fields", identity.LoginInput{}, invalid("email", "password")},
		{"missing password", identity.LoginInput{Email: "a@example.com"}, invalid("password")},
		// No account can have these: the answer to a wrong password.
		{"NUL in the email", identity.LoginInput{Email: "a\x00@example.com", Password: "x"}, wrong},
		{"email over 254 bytes", identity.LoginInput{Email: strings.Repeat("a", 250) + "@x.io", Password: "x"}, wrong},
		{"password over 256 bytes", identity.LoginInput{Email: "a@example.com", Password: strings.Repeat("p", 257)}, wrong},
		{"unknown email", identity.LoginInput{Email: "nobody@example.com", Password: "not-the-password"}, wrong},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := svc.Login(context.Background(), tc.in, "203.0.113.7")
			if diff := cmp.Diff(tc.want, refusalOf(err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tc.want.Kind == fault.KindUnauthenticated && !errors.Is(err, identity.ErrInvalidCredentials) {
				t.Errorf("err = %v, want ErrInvalidCredentials", err)
			}
		})
	}
}

// TestLoginThrottled: an attempt beyond a limit is refused as rate limited
// before any password check, with the wait rounded up to whole seconds.
func TestLoginThrottled(t *testing.T) {
	t.Parallel()
	svc := newService(t, identity.Limits{PerEmailIP: 2}, 90*time.Second+200*time.Millisecond)
	in := identity.LoginInput{Email: "nobody@example.com", Password: "not-the-password"}
	for i := range 2 {
		if _, err := svc.Login(context.Background(), in, "203.0.113.7"); !errors.Is(err, identity.ErrInvalidCredentials) {
			t.Fatalf("attempt %d: %v, want invalid credentials", i+1, err)
		}
	}
	_, err := svc.Login(context.Background(), in, "203.0.113.7")
	var f *fault.Error
	if !errors.As(err, &f) {
		t.Fatalf("third attempt: %v, want a fault", err)
	}
	type throttled struct {
		Kind       fault.Kind
		Code       string
		RetryAfter int
	}
	if diff := cmp.Diff(throttled{fault.KindRateLimited, "rate_limited", 91}, throttled{f.Kind, f.Code, f.RetryAfter}); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Another address is counted apart.
	if _, err := svc.Login(context.Background(), in, "198.51.100.1"); !errors.Is(err, identity.ErrInvalidCredentials) {
		t.Errorf("other address: %v, want invalid credentials", err)
	}
}

func TestRefreshRules(t *testing.T) {
	t.Parallel()
	svc := newService(t, identity.Limits{}, 0)
	long := identity.RefreshInput{RefreshToken: strings.Repeat("r", 513)}
	if diff := cmp.Diff(invalid("refresh_token"), refusalOf(mustErr(svc.Refresh(context.Background(), identity.RefreshInput{})))); diff != "" {
		t.Errorf("missing token (-want +got):\n%s", diff)
	}
	if _, err := svc.Refresh(context.Background(), long); !errors.Is(err, identity.ErrInvalidRefresh) {
		t.Errorf("token over 512 bytes: %v, want ErrInvalidRefresh", err)
	}
	// Logging out is idempotent and reveals nothing: a token that cannot
	// exist logs out without asking storage.
	if err := svc.Logout(context.Background(), long); err != nil {
		t.Errorf("logout of a token over 512 bytes: %v, want nil", err)
	}
	if diff := cmp.Diff(invalid("refresh_token"), refusalOf(svc.Logout(context.Background(), identity.RefreshInput{}))); diff != "" {
		t.Errorf("logout without a token (-want +got):\n%s", diff)
	}
}

func mustErr(_ identity.Session, err error) error { return err }

// TestCurrentAdmin: identity's admin actions follow the stored account, not
// the role claim of a token still valid.
func TestCurrentAdmin(t *testing.T) {
	t.Parallel()
	svc := newService(t, identity.Limits{}, 0,
		identity.User{ID: 1, Role: auth.RoleAdmin, Active: true},
		identity.User{ID: 2, Role: auth.RoleUser, Active: true},
		identity.User{ID: 3, Role: auth.RoleAdmin, Active: false})
	tests := []struct {
		name string
		id   int64
		want error
	}{
		{"active admin", 1, nil},
		{"demoted", 2, identity.ErrNotAdmin},
		{"deactivated", 3, identity.ErrInactive},
		{"deleted", 4, identity.ErrInactive},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := svc.CurrentAdmin(context.Background(), tc.id)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if err != nil {
				if diff := cmp.Diff(tc.want.Error(), err.Error()); diff != "" {
					t.Errorf("code and detail (-want +got):\n%s", diff)
				}
			}
		})
	}
}
