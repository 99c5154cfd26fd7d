package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

// The tests in this file make races deterministic with PostgreSQL itself:
// a test transaction holds a lock, the requests are started one by one, and
// each is known to be queued once PostgreSQL reports one more session of the
// test database waiting for a lock. Releasing the lock then lets them run in
// the order the race needs.

// waitFor polls cond until it holds; after 15 s the test fails.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// start sends r in the background; the answer arrives on the channel.
func (e *env) start(r req) <-chan *httptest.ResponseRecorder {
	ch := make(chan *httptest.ResponseRecorder, 1)
	go func() { ch <- e.do(r) }()
	return ch
}

func await(t testing.TB, ch <-chan *httptest.ResponseRecorder) *httptest.ResponseRecorder {
	t.Helper()
	select {
	case rec := <-ch:
		return rec
	case <-time.After(30 * time.Second):
		t.Fatal("request did not finish")
		return nil
	}
}

// Exact problem bodies (request_id aside, which is checked to be present).
var (
	invalidCredentials = map[string]any{"type": "/docs/problems#unauthenticated", "title": "Unauthorized",
		"status": 401.0, "detail": "invalid email or password", "code": "unauthenticated"}
	invalidRefresh = map[string]any{"type": "/docs/problems#unauthenticated", "title": "Unauthorized",
		"status": 401.0, "detail": "invalid or expired refresh token", "code": "unauthenticated"}
	rateLimited = map[string]any{"type": "/docs/problems#rate_limited", "title": "Too Many Requests",
		"status": 429.0, "detail": "too many requests, retry later", "code": "rate_limited"}
)

// wantBody checks a problem+json answer in full: status, content type and
// every member of the body.
func wantBody(t testing.TB, rec *httptest.ResponseRecorder, status int, want map[string]any) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); ct != problem.ContentType {
		t.Fatalf("content type = %q, want %q", ct, problem.ContentType)
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("decode %s: %v", rec.Body.String(), err)
	}
	if id, _ := got["request_id"].(string); id == "" {
		t.Errorf("problem without request_id: %s", rec.Body.String())
	}
	delete(got, "request_id")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("problem body (-want +got):\n%s", diff)
	}
}

// liveRefreshTokens counts the user's refresh tokens that are not revoked.
func (e *env) liveRefreshTokens(userID int64) int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(),
		`SELECT count(*) FROM refresh_tokens WHERE user_id = $1 AND revoked_at IS NULL`, userID).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// accountChange is an admin request racing a login or a refresh.
type accountChange struct {
	name   string
	req    func(u userOut) req
	role   string // the user's role when created
	revoke bool   // the change revokes the user's refresh tokens
}

var accountChanges = []accountChange{
	{name: "password change", role: "user", revoke: true, req: func(u userOut) req {
		return req{method: "PUT", path: "/users/" + id(u.ID),
			body: mustJSON(map[string]any{"name": u.Name, "email": u.Email, "password": "changed-password-9"})}
	}},
	{name: "deactivation", role: "user", revoke: true, req: func(u userOut) req {
		return req{method: "DELETE", path: "/users/" + id(u.ID)}
	}},
	{name: "demotion", role: "admin", req: func(u userOut) req {
		return req{method: "PUT", path: "/users/" + id(u.ID),
			body: mustJSON(map[string]any{"name": u.Name, "email": u.Email, "role": "user"})}
	}},
}

// TestLoginRacingAccountChange: a login whose password check passed before
// an admin's change committed, and whose session is stored after it, must
// not keep a refresh token the change did not see (the change revokes only
// the tokens that exist when it runs), nor sign the role the change took
// away. The user's row is locked, the change queues on it, the login reads
// the old hash, verifies it and queues behind the change; then the lock is
// released.
func TestLoginRacingAccountChange(t *testing.T) {
	t.Parallel()
	for _, tc := range accountChanges {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, options{loginFailures: 10})
			u := e.createUser("Racer", uniqueEmail("racer"), "racer-password-1", tc.role, nil)

			release := testdb.Hold(t, e.db, `SELECT 1 FROM users WHERE id = $1 FOR UPDATE`, u.ID)
			change := tc.req(u)
			change.token = e.admin
			changed := e.start(change)
			testdb.WaitLockWaiters(t, e.db, 1)
			login := e.start(req{method: "POST", path: "/auth/login",
				body: mustJSON(map[string]string{"email": u.Email, "password": "racer-password-1"})})
			testdb.WaitLockWaiters(t, e.db, 2)
			release()

			decode(t, await(t, changed), http.StatusOK, nil)
			rec := await(t, login)
			if tc.revoke {
				wantBody(t, rec, http.StatusUnauthorized, invalidCredentials)
				if got := rec.Header().Get("WWW-Authenticate"); got != `Bearer realm="crm"` {
					t.Errorf("WWW-Authenticate = %q", got)
				}
				if n := e.liveRefreshTokens(u.ID); n != 0 {
					t.Fatalf("%d refresh tokens survived the %s", n, tc.name)
				}
				return
			}
			// Not a revoking change: the login succeeds with the account as
			// the change left it.
			var s envelope[sessionOut]
			decode(t, rec, http.StatusOK, &s)
			c, err := jwksVerifier(t, e).Verify(context.Background(), s.Data.AccessToken)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"user", "user"}, []string{s.Data.User.Role, c.Role}); diff != "" {
				t.Fatalf("role of the session and its access token (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoginThrottleCountsConcurrentAttempts: attempts that arrive together
// are counted before any password is checked, so a burst gets no more
// password checks than the limit allows; the rest are 429 without hashing,
// and an unknown email is answered exactly alike. The users table is
// locked so that every attempt allowed to check a password waits inside
// the check; the test releases it only once every attempt has either
// queued there or been answered.
func TestLoginThrottleCountsConcurrentAttempts(t *testing.T) {
	t.Parallel()
	const limit, burst = 3, 8
	for _, known := range []bool{true, false} {
		name := map[bool]string{true: "known email", false: "unknown email"}[known]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, options{loginFailures: limit})
			email := uniqueEmail("burst")
			if known {
				e.createUser("Burst", email, "burst-password-1", "user", nil)
			}
			attempt := req{method: "POST", path: "/auth/login",
				body: mustJSON(map[string]string{"email": email, "password": "wrong-password-1"})}

			release := testdb.Hold(t, e.db, `LOCK TABLE users IN ACCESS EXCLUSIVE MODE`)
			answers := make([]<-chan *httptest.ResponseRecorder, burst)
			for i := range answers {
				answers[i] = e.start(attempt)
			}
			waitFor(t, "every attempt to be queued or answered", func() bool {
				answered := 0
				for _, ch := range answers {
					if len(ch) == 1 {
						answered++
					}
				}
				return answered+testdb.LockWaiters(t, e.db) >= burst
			})
			release()

			codes := map[int]int{}
			for _, ch := range answers {
				rec := await(t, ch)
				codes[rec.Code]++
				switch rec.Code {
				case http.StatusUnauthorized:
					wantBody(t, rec, rec.Code, invalidCredentials)
				case http.StatusTooManyRequests:
					wantBody(t, rec, rec.Code, rateLimited)
					wantRetryAfter(t, rec)
				}
			}
			if diff := cmp.Diff(map[int]int{401: limit, 429: burst - limit}, codes); diff != "" {
				t.Fatalf("answers to %d concurrent attempts with limit %d (-want +got):\n%s", burst, limit, diff)
			}
			// The limit is reached: even the right password is refused.
			rec := e.do(req{method: "POST", path: "/auth/login",
				body: mustJSON(map[string]string{"email": email, "password": "burst-password-1"})})
			wantBody(t, rec, http.StatusTooManyRequests, rateLimited)
			wantRetryAfter(t, rec)
		})
	}
}

func wantRetryAfter(t testing.TB, rec *httptest.ResponseRecorder) {
	t.Helper()
	if s, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || s < 1 || s > 900 {
		t.Fatalf("Retry-After = %q, want 1..900 seconds", rec.Header().Get("Retry-After"))
	}
}

// TestRefreshRacingAccountChange: a refresh and a password change or
// deactivation of the same user serialise on the user's row (the change
// locks it, then the tokens; so does the refresh), whichever comes first:
// neither side is a deadlock's 500, and the session ends revoked.
//   - refresh first: the presented token's row is locked, the refresh queues
//     on it, then the change. The refresh wins (200), and the token it
//     issued is revoked by the change.
//   - change first: the user's row is locked, the change queues on it, then
//     the refresh. The change revokes the token, the refresh is 401.
func TestRefreshRacingAccountChange(t *testing.T) {
	t.Parallel()
	for _, tc := range accountChanges {
		if !tc.revoke {
			continue
		}
		for _, refreshFirst := range []bool{true, false} {
			order := map[bool]string{true: "refresh first", false: "change first"}[refreshFirst]
			t.Run(tc.name+", "+order, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, options{})
				u := e.createUser("Racer", uniqueEmail("racer"), "racer-password-1", tc.role, nil)
				s := e.login(u.Email, "racer-password-1")
				change := tc.req(u)
				change.token = e.admin
				refresh := req{method: "POST", path: "/auth/refresh", body: mustJSON(map[string]string{"refresh_token": s.RefreshToken})}

				var release func()
				var changed, refreshed <-chan *httptest.ResponseRecorder
				if refreshFirst {
					release = testdb.Hold(t, e.db, `SELECT 1 FROM refresh_tokens WHERE token_hash = $1 FOR UPDATE`, identity.HashSecret(s.RefreshToken))
					refreshed = e.start(refresh)
					testdb.WaitLockWaiters(t, e.db, 1)
					changed = e.start(change)
				} else {
					release = testdb.Hold(t, e.db, `SELECT 1 FROM users WHERE id = $1 FOR UPDATE`, u.ID)
					changed = e.start(change)
					testdb.WaitLockWaiters(t, e.db, 1)
					refreshed = e.start(refresh)
				}
				testdb.WaitLockWaiters(t, e.db, 2)
				release()

				rec := await(t, refreshed)
				decode(t, await(t, changed), http.StatusOK, nil)
				if refreshFirst {
					var next envelope[sessionOut]
					decode(t, rec, http.StatusOK, &next)
					rec = e.refresh(next.Data.RefreshToken)
				}
				wantBody(t, rec, http.StatusUnauthorized, invalidRefresh)
				if n := e.liveRefreshTokens(u.ID); n != 0 {
					t.Fatalf("%d refresh tokens survived the %s", n, tc.name)
				}
			})
		}
	}
}
