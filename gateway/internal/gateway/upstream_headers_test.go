package gateway

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/identityapi"
)

// scriptedIntake answers every request with status, headers and body
// taken from the request's X-Script header (a key into answers).
func scriptedIntake(t *testing.T, answers map[string]scripted) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.Header.Get("X-Script")]
		if !ok {
			http.Error(w, "no script", http.StatusTeapot)
			return
		}
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type scripted struct {
	status int
	header map[string]string
	body   string
}

// wantHeaders compares the named headers of r with want ("" = absent).
func wantHeaders(t *testing.T, r response, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for k := range want {
		got[k] = strings.Join(r.header.Values(k), ", ")
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("headers (-want +got):\n%s", d)
	}
}

const intakeProblem = `{"type":"/docs/problems/rate_limited","title":"Too Many Requests","status":429,"code":"rate_limited"}`

// TestUpstreamRateLimitHeaders: intake limits per API key and sends its own
// RateLimit-* set. The client sees the tightest applicable limit: the
// service's when it has as few or fewer requests left than the gateway's
// per-IP limit, the gateway's otherwise or when the service sent none.
// Retry-After and the body of the service's 429 pass through.
func TestUpstreamRateLimitHeaders(t *testing.T) {
	t.Parallel()
	answers := map[string]scripted{
		"key-429": {status: http.StatusTooManyRequests, body: intakeProblem, header: map[string]string{
			"Content-Type": "application/problem+json", "Retry-After": "42",
			"RateLimit-Limit": "60", "RateLimit-Remaining": "0", "RateLimit-Reset": "42"}},
		"key-tight": {status: http.StatusCreated, body: `{"id":1}`, header: map[string]string{
			"Content-Type": "application/json", "RateLimit-Limit": "60", "RateLimit-Remaining": "3", "RateLimit-Reset": "17"}},
		"key-loose": {status: http.StatusCreated, body: `{"id":2}`, header: map[string]string{
			"Content-Type": "application/json", "RateLimit-Limit": "100000", "RateLimit-Remaining": "99999", "RateLimit-Reset": "17"}},
		"none": {status: http.StatusCreated, body: `{"id":3}`, header: map[string]string{"Content-Type": "application/json"}},
	}
	intake := scriptedIntake(t, answers)
	tests := []struct {
		name       string
		script     string
		wantStatus int
		wantBody   string
		want       map[string]string
	}{
		{"service 429 keeps the service's set and Retry-After", "key-429", http.StatusTooManyRequests, intakeProblem,
			map[string]string{"RateLimit-Limit": "60", "RateLimit-Remaining": "0", "RateLimit-Reset": "42", "Retry-After": "42"}},
		{"service 201 with the tighter set keeps it", "key-tight", http.StatusCreated, `{"id":1}`,
			map[string]string{"RateLimit-Limit": "60", "RateLimit-Remaining": "3", "RateLimit-Reset": "17", "Retry-After": ""}},
		{"service 201 with a looser set gets the gateway's", "key-loose", http.StatusCreated, `{"id":2}`,
			map[string]string{"RateLimit-Limit": "6000", "RateLimit-Remaining": "5999", "Retry-After": ""}},
		{"service 201 without a set gets the gateway's", "none", http.StatusCreated, `{"id":3}`,
			map[string]string{"RateLimit-Limit": "6000", "RateLimit-Remaining": "5999", "Retry-After": ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// One gateway per case: each request is the first of its IP window.
			e := newEnv(t, func(c *Config) { c.IPPerMinute = 6000; c.Services[SvcIntake] = intake })
			e.identity.AddKey("crm_live_rl", identityapi.VerifiedKey{})
			r := e.do(req{method: "POST", path: "/api/public/leads", body: strings.NewReader(`{}`),
				header: map[string]string{"X-API-Key": "crm_live_rl", "X-Script": tc.script}})
			if r.status != tc.wantStatus || string(r.body) != tc.wantBody {
				t.Errorf("answer = %d %s, want %d %s", r.status, r.body, tc.wantStatus, tc.wantBody)
			}
			wantHeaders(t, r, tc.want)
			if tc.want["RateLimit-Reset"] == "" {
				// The gateway's own window: 1..60 seconds.
				vs := r.header.Values("RateLimit-Reset")
				if n, err := strconv.Atoi(strings.Join(vs, ",")); err != nil || n < 1 || n > 60 {
					t.Errorf("RateLimit-Reset = %q, want one value in 1..60", vs)
				}
			}
		})
	}
}

// TestPublicCORSFollowsTheService: intake refuses an origin the key does
// not allow with 403 and no Access-Control-Allow-Origin; the gateway's
// grant must not reappear on that refusal. When the service grants the
// origin its headers are what the client sees.
func TestPublicCORSFollowsTheService(t *testing.T) {
	t.Parallel()
	const forbidden = `{"type":"/docs/problems/forbidden","title":"Forbidden","status":403,"code":"forbidden"}`
	answers := map[string]scripted{
		"refused": {status: http.StatusForbidden, body: forbidden, header: map[string]string{
			"Content-Type": "application/problem+json", "Vary": "Origin"}},
		"granted": {status: http.StatusCreated, body: `{"id":1}`, header: map[string]string{
			"Content-Type": "application/json", "Vary": "Origin",
			"Access-Control-Allow-Origin":   "https://forms.example.com",
			"Access-Control-Expose-Headers": "RateLimit-Limit, Idempotent-Replayed"}},
	}
	intake := scriptedIntake(t, answers)
	e := newEnv(t, func(c *Config) { c.CORSOrigins = []string{"*"}; c.Services[SvcIntake] = intake })
	e.identity.AddKey("crm_live_cors", identityapi.VerifiedKey{})
	tests := []struct {
		name       string
		script     string
		origin     string
		wantStatus int
		wantBody   string
		want       map[string]string
	}{
		{"service 403 without the header: none at the client", "refused", "https://evil.example", http.StatusForbidden, forbidden,
			map[string]string{"Access-Control-Allow-Origin": "", "Access-Control-Expose-Headers": "", "Vary": "Origin"}},
		{"service 201 with the header: kept", "granted", "https://forms.example.com", http.StatusCreated, `{"id":1}`,
			map[string]string{"Access-Control-Allow-Origin": "https://forms.example.com",
				"Access-Control-Expose-Headers": "RateLimit-Limit, Idempotent-Replayed", "Vary": "Origin"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := e.do(req{method: "POST", path: "/api/public/leads", body: strings.NewReader(`{}`),
				header: map[string]string{"X-API-Key": "crm_live_cors", "X-Script": tc.script, "Origin": tc.origin}})
			if r.status != tc.wantStatus || string(r.body) != tc.wantBody {
				t.Errorf("answer = %d %s, want %d %s", r.status, r.body, tc.wantStatus, tc.wantBody)
			}
			wantHeaders(t, r, tc.want)
		})
	}
	// Refusals of the gateway's own still carry its grant, so the browser
	// can read them (unchanged).
	r := e.do(req{method: "POST", path: "/api/public/leads", body: strings.NewReader(`{}`),
		header: map[string]string{"X-API-Key": "crm_live_unknown", "Origin": "https://evil.example"}})
	wantProblem(t, r, http.StatusUnauthorized, "unauthenticated")
	wantHeaders(t, r, map[string]string{"Access-Control-Allow-Origin": "*"})
}
