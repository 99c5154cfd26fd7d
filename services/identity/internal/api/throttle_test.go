package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/services/identity/internal/identity"
)

// loginFrom attempts a login as if from client address ip (through the
// trusted local proxy).
func (e *env) loginFrom(ip, email, password string) *httptest.ResponseRecorder {
	return e.do(req{method: "POST", path: "/auth/login", remote: "127.0.0.1:5000",
		header: map[string]string{"X-Forwarded-For": ip},
		body:   mustJSON(map[string]string{"email": email, "password": password})})
}

// retryAfter is the 429's Retry-After in seconds, checked to lie within
// (0, window].
func retryAfter(t *testing.T, rec *httptest.ResponseRecorder, window time.Duration) int {
	t.Helper()
	wantProblem(t, rec, http.StatusTooManyRequests, "rate_limited")
	ra, err := strconv.Atoi(rec.Header().Get("Retry-After"))
	if err != nil || ra < 1 || time.Duration(ra)*time.Second > window {
		t.Fatalf("Retry-After = %q, want 1..%d", rec.Header().Get("Retry-After"), int(window.Seconds()))
	}
	return ra
}

// TestLoginPasswordSpraying: one address trying one password on 30
// accounts is refused after the per-IP limit, even for an account it never
// tried before; the same accounts stay open from elsewhere.
func TestLoginPasswordSpraying(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{limits: identity.Limits{PerEmailIP: 10, PerEmail: 30, PerIP: 20}})
	emails := make([]string, 30)
	for i := range emails {
		emails[i] = e.createUser(fmt.Sprintf("Sprayed %d", i), uniqueEmail("spray"), "spray-password-1", "user", nil).Email
	}
	var got []int
	for _, email := range emails {
		rec := e.loginFrom("198.51.100.20", email, "Summer2026!")
		got = append(got, rec.Code)
		if rec.Code == http.StatusTooManyRequests {
			retryAfter(t, rec, 15*time.Minute)
		} else {
			wantProblem(t, rec, http.StatusUnauthorized, "unauthenticated")
		}
	}
	want := make([]int, 30)
	for i := range want {
		want[i] = http.StatusUnauthorized
		if i >= 20 {
			want[i] = http.StatusTooManyRequests
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statuses of the spray (-want +got):\n%s", diff)
	}
	// Even the right password is refused from that address now...
	retryAfter(t, e.loginFrom("198.51.100.20", emails[29], "spray-password-1"), 15*time.Minute)
	// ...while its owner elsewhere is not affected.
	decode(t, e.loginFrom("198.51.100.21", emails[29], "spray-password-1"), http.StatusOK, nil)
}

// TestLoginSuccessesDoNotFillTheAddressCount: many users behind one
// address (an office) who log in successfully never reach the per-IP limit.
func TestLoginSuccessesDoNotFillTheAddressCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{limits: identity.Limits{PerEmailIP: 10, PerEmail: 30, PerIP: 3}})
	for i := 0; i < 6; i++ {
		u := e.createUser(fmt.Sprintf("Office %d", i), uniqueEmail("office"), "office-password-1", "user", nil)
		decode(t, e.loginFrom("198.51.100.30", u.Email, "office-password-1"), http.StatusOK, nil)
	}
}

// TestLoginDistributedGuessing: guesses at one account from many addresses
// are refused after the per-account limit, except from an address its
// owner logged in from before.
func TestLoginDistributedGuessing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{limits: identity.Limits{PerEmailIP: 3, PerEmail: 5, PerIP: 100}})
	u := e.createUser("Target", uniqueEmail("target"), "target-password-1", "user", nil)
	decode(t, e.loginFrom("198.51.100.40", u.Email, "target-password-1"), http.StatusOK, nil) // the owner's office
	for i := 0; i < 5; i++ {
		wantProblem(t, e.loginFrom(fmt.Sprintf("192.0.2.%d", i+1), u.Email, "guess"), http.StatusUnauthorized, "unauthenticated")
	}
	retryAfter(t, e.loginFrom("192.0.2.99", u.Email, "guess"), 15*time.Minute)
	// The owner from a new address waits like the guesser...
	retryAfter(t, e.loginFrom("198.51.100.41", u.Email, "target-password-1"), 15*time.Minute)
	// ...but not from the address they use.
	decode(t, e.loginFrom("198.51.100.40", u.Email, "target-password-1"), http.StatusOK, nil)
}

// TestLoginOwnerNotLockedBeyondWindow: attempts during a lock do not
// extend it, and once the window has passed the owner logs in, wherever
// from. The window is shortened to 2 s; the production window is 15
// minutes (and Retry-After never exceeds it, TestLoginThrottle).
func TestLoginOwnerNotLockedBeyondWindow(t *testing.T) {
	t.Parallel()
	const window = 2 * time.Second
	e := newEnv(t, options{window: window, limits: identity.Limits{PerEmailIP: 2, PerEmail: 3, PerIP: 100}})
	u := e.createUser("Owner", uniqueEmail("owner"), "owner-password-1", "user", nil)
	for i := 0; i < 3; i++ {
		wantProblem(t, e.loginFrom(fmt.Sprintf("192.0.2.%d", i+1), u.Email, "guess"), http.StatusUnauthorized, "unauthenticated")
	}
	first := time.Now()
	retryAfter(t, e.loginFrom("198.51.100.50", u.Email, "owner-password-1"), window)
	// The guesser keeps trying: the lock does not grow.
	for i := 0; i < 5; i++ {
		retryAfter(t, e.loginFrom("192.0.2.1", u.Email, "guess"), window)
	}
	time.Sleep(window - time.Since(first) + 100*time.Millisecond)
	decode(t, e.loginFrom("198.51.100.50", u.Email, "owner-password-1"), http.StatusOK, nil)
}
