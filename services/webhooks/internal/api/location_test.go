package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCreateSetsLocation: a 201 names the new subscription's URL as the
// client reads it through the gateway (/api and the subscription's path),
// and that path, less /api, is the subscription here.
func TestCreateSetsLocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	tests := []struct {
		name, token string
	}{
		{"admin person", e.admin},
		{"integration token", e.scoped("webhooks:write")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(http.MethodPost, "/webhooks", tt.token, `{"url":"http://127.0.0.1:1/x","events":["*"]}`)
			if r.status != http.StatusCreated {
				t.Fatalf("create: %d %s", r.status, r.body)
			}
			created := decode[record[hook]](t, r).Data
			want := "/api/webhooks/" + strconv.FormatInt(created.ID, 10)
			if diff := cmp.Diff(want, r.header.Get("Location")); diff != "" {
				t.Errorf("Location (-want +got)\n%s", diff)
			}
			got := e.do(http.MethodGet, strings.TrimPrefix(r.header.Get("Location"), "/api"), tt.token, nil)
			if got.status != http.StatusOK || decode[record[hook]](t, got).Data.ID != created.ID {
				t.Errorf("GET Location: %d %s", got.status, got.body)
			}
		})
	}
}
