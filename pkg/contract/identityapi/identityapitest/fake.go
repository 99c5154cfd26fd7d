// Package identityapitest is identity's fake for other contexts' tests:
// an http.Handler that answers identity's internal API from memory. Run is
// the contract both the fake and identity's real handlers pass (identity's
// own tests run it), so the fake cannot drift from the service.
package identityapitest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
)

// Fake answers identity's internal API from memory.
type Fake struct {
	secret string
	h      http.Handler

	mu       sync.Mutex
	users    map[int64]identityapi.DirectoryUser
	keys     map[string]identityapi.VerifiedKey
	tokens   map[string]identityapi.VerifiedAccessToken
	nextID   int64
	verifies int
	tokenAsk int
	failWith int
	gate     chan struct{}
}

// NewFake answers callers presenting the internal secret.
func NewFake(secret string) *Fake {
	f := &Fake{secret: secret, users: map[int64]identityapi.DirectoryUser{},
		keys: map[string]identityapi.VerifiedKey{}, tokens: map[string]identityapi.VerifiedAccessToken{}, nextID: 1}
	f.h = auth.RequireInternal(secret)(http.HandlerFunc(f.serve))
	return f
}

// Start serves f on a loopback listener closed when t ends, and returns a
// client of it.
func (f *Fake) Start(t testing.TB) (*httptest.Server, *identityapi.Client) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv, identityapi.New(srv.URL, f.secret)
}

// AddUser stores u (its id assigned when zero) and returns it.
func (f *Fake) AddUser(u identityapi.DirectoryUser) identityapi.DirectoryUser {
	f.mu.Lock()
	defer f.mu.Unlock()
	if u.ID == 0 {
		u.ID = f.nextID
	}
	f.nextID = max(f.nextID, u.ID+1)
	if u.UpdatedAt.IsZero() {
		u.UpdatedAt = time.Now().UTC()
	}
	f.users[u.ID] = u
	return u
}

// AddKey makes secret a valid key described by k (id assigned when zero,
// prefix and origins filled as identity does).
func (f *Fake) AddKey(secret string, k identityapi.VerifiedKey) identityapi.VerifiedKey {
	f.mu.Lock()
	defer f.mu.Unlock()
	if k.ID == 0 {
		k.ID = f.nextID
		f.nextID++
	}
	if k.Name == "" {
		k.Name = "form"
	}
	if k.Prefix == "" {
		k.Prefix = secret[:min(len(secret), 12)]
	}
	if k.RateLimitPerMinute == 0 {
		k.RateLimitPerMinute = 60
	}
	if k.AllowedOrigins == nil {
		k.AllowedOrigins = []string{}
	}
	f.keys[secret] = k
	return k
}

// RevokeKey makes secret unknown.
func (f *Fake) RevokeKey(secret string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.keys, secret)
}

// AddAccessToken makes secret a valid integration token answered with t
// (id assigned when zero; role user, no scopes, a placeholder minted
// token living 60 s unless given).
func (f *Fake) AddAccessToken(secret string, t identityapi.VerifiedAccessToken) identityapi.VerifiedAccessToken {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.ID == 0 {
		t.ID = f.nextID
		f.nextID++
	}
	if t.UserID == 0 {
		t.UserID = t.ID + 1000
	}
	if t.Role == "" {
		t.Role = auth.RoleUser
	}
	if t.Scopes == nil {
		t.Scopes = []string{}
	}
	if t.AccessToken == "" {
		t.AccessToken = "minted-for-" + strconv.FormatInt(t.UserID, 10)
	}
	if t.ExpiresIn == 0 {
		t.ExpiresIn = 60
	}
	f.tokens[secret] = t
	return t
}

// RevokeAccessToken makes secret unknown.
func (f *Fake) RevokeAccessToken(secret string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.tokens, secret)
}

// TokenVerifications counts the integration-token verifications asked so
// far.
func (f *Fake) TokenVerifications() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokenAsk
}

// Verifications counts the key verifications asked so far.
func (f *Fake) Verifications() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.verifies
}

// FailWith makes every call answer status (a 500, a 503...); 0 answers
// normally again.
func (f *Fake) FailWith(status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failWith = status
}

// Hold makes answers wait until gate is closed (nil: answer at once).
func (f *Fake) Hold(gate chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate = gate
}

// ServeHTTP implements identity's internal routes behind the same
// internal-secret check as identity's.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.h.ServeHTTP(w, r) }

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	switch r.URL.Path {
	case identityapi.PathVerifyKey:
		f.verifies++
	case identityapi.PathVerifyAccessToken:
		f.tokenAsk++
	}
	failWith, gate := f.failWith, f.gate
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if failWith != 0 {
		w.WriteHeader(failWith)
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == identityapi.PathUsers:
		f.mu.Lock()
		out := make([]identityapi.DirectoryUser, 0, len(f.users))
		for id := int64(1); id < f.nextID; id++ {
			if u, ok := f.users[id]; ok {
				out = append(out, u)
			}
		}
		f.mu.Unlock()
		httpx.OK(w, out)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, identityapi.PathUsers+"/"):
		id, err := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, identityapi.PathUsers+"/"), 10, 64)
		if err != nil || id <= 0 {
			problem.Write(w, r, problem.NotFound("user"))
			return
		}
		f.mu.Lock()
		u, ok := f.users[id]
		f.mu.Unlock()
		if !ok {
			problem.Write(w, r, problem.NotFound("user"))
			return
		}
		httpx.OK(w, u)
	case r.Method == http.MethodPost && r.URL.Path == identityapi.PathVerifyKey:
		var in identityapi.VerifyKeyRequest
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			problem.Write(w, r, problem.MalformedJSON("the body is not valid JSON"))
			return
		}
		if in.Key == "" {
			problem.Write(w, r, problem.Invalid("key", "is required"))
			return
		}
		f.mu.Lock()
		k, ok := f.keys[in.Key]
		f.mu.Unlock()
		if !ok {
			problem.Write(w, r, problem.Unauthenticated("invalid or revoked API key"))
			return
		}
		httpx.OK(w, k)
	case r.Method == http.MethodPost && r.URL.Path == identityapi.PathVerifyAccessToken:
		var in identityapi.VerifyAccessTokenRequest
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			problem.Write(w, r, problem.MalformedJSON("the body is not valid JSON"))
			return
		}
		if in.Token == "" {
			problem.Write(w, r, problem.Invalid("token", "is required"))
			return
		}
		f.mu.Lock()
		t, ok := f.tokens[in.Token]
		f.mu.Unlock()
		if !ok {
			problem.Write(w, r, problem.Unauthenticated("invalid, revoked or expired access token"))
			return
		}
		httpx.OK(w, t)
	default:
		problem.Write(w, r, problem.NotFound("route"))
	}
}
