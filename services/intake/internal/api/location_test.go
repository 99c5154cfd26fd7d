package api_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCreatedLocation: a 201 names the lead it created under /api (a public
// lead is a lead), as the gateway used to add it; a replay names it again;
// a queued submission (202) names nothing.
func TestCreatedLocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.newKey(7, 0)
	tests := []struct {
		name       string
		extra      []string
		wantStatus int
		want       string
	}{
		{"created", nil, http.StatusCreated, "/api/leads/1001"},
		{"with a key", []string{"Idempotency-Key", "loc-1"}, http.StatusCreated, "/api/leads/1002"},
		{"replayed", []string{"Idempotency-Key", "loc-1"}, http.StatusCreated, "/api/leads/1002"},
	}
	for _, tc := range tests {
		r := e.post(key, validBody, tc.extra...)
		if r.status != tc.wantStatus {
			t.Fatalf("%s: status %d %s", tc.name, r.status, r.body)
		}
		if diff := cmp.Diff(tc.want, r.header.Get("Location")); diff != "" {
			t.Errorf("%s: Location (-want +got):\n%s", tc.name, diff)
		}
	}
	e.leads.stop()
	r := e.post(key, validBody)
	if r.status != http.StatusAccepted || r.header.Get("Location") != "" {
		t.Errorf("queued: %d, Location %q; want 202 without one", r.status, r.header.Get("Location"))
	}
}
