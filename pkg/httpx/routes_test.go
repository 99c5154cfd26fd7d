package httpx_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/httpx"
)

func TestRoutesAnswersUnroutedAsProblems(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /contacts/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("PUT /contacts/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	h := httpx.Routes(mux)
	tests := []struct {
		name, method, path string
		status             int
		allow              string
		body               map[string]any
	}{
		{"routed", "GET", "/contacts/1", 200, "", nil},
		{"other method", "PATCH", "/contacts/1", 405, "GET, HEAD, PUT", map[string]any{
			"type": "/docs/problems#method_not_allowed", "title": "Method Not Allowed", "status": float64(405),
			"detail": "allowed methods: GET, HEAD, PUT", "code": "method_not_allowed"}},
		{"unknown path", "GET", "/nope", 404, "", map[string]any{
			"type": "/docs/problems#not_found", "title": "Not Found", "status": float64(404),
			"detail": "route not found", "code": "not_found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if rec.Code != tt.status || rec.Header().Get("Allow") != tt.allow {
				t.Fatalf("status %d, Allow %q; want %d, %q", rec.Code, rec.Header().Get("Allow"), tt.status, tt.allow)
			}
			if tt.body == nil {
				return
			}
			var got map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.body, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}
