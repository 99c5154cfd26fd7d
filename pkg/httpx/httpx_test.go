package httpx_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
)

type body struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

func TestDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		contentType string
		body        string
		limit       int64
		wantStatus  int
		wantCode    string
		wantField   string
	}{
		{"valid", "application/json", `{"name":"a","count":2,"unknown":true}`, 0, 0, "", ""},
		{"charset parameter", "application/json; charset=utf-8", `{"name":"a"}`, 0, 0, "", ""},
		{"wrong content type", "text/plain", `{"name":"a"}`, 0, 415, "unsupported_media_type", ""},
		{"missing content type", "", `{"name":"a"}`, 0, 415, "unsupported_media_type", ""},
		{"malformed", "application/json", `{"name":`, 0, 400, "malformed_json", ""},
		{"not an object", "application/json", `[1,2]`, 0, 400, "malformed_json", ""},
		{"empty", "application/json", ``, 0, 400, "malformed_json", ""},
		{"two values", "application/json", `{"name":"a"} {"name":"b"}`, 0, 400, "malformed_json", ""},
		{"wrong type", "application/json", `{"count":"many"}`, 0, 422, "validation_failed", "count"},
		{"over limit", "application/json", `{"name":"` + strings.Repeat("x", 200) + `"}`, 64, 413, "payload_too_large", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tt.body))
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			r.ContentLength = -1 // exercise the streaming limit, not only Content-Length
			var got body
			err := httpx.Decode(httptest.NewRecorder(), r, &got, tt.limit)
			if tt.wantStatus == 0 {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			p := problem.From(err)
			if p.Status != tt.wantStatus || p.Code != tt.wantCode {
				t.Fatalf("got %d %s, want %d %s", p.Status, p.Code, tt.wantStatus, tt.wantCode)
			}
			if tt.wantField != "" && (len(p.Errors) != 1 || p.Errors[0].Field != tt.wantField) {
				t.Errorf("field errors = %+v, want field %s", p.Errors, tt.wantField)
			}
		})
	}
}

func TestOpsHandler(t *testing.T) {
	t.Parallel()
	ops, err := httpx.NewOps()
	if err != nil {
		t.Fatal(err)
	}
	api := http.NewServeMux()
	api.HandleFunc("GET /boom", func(w http.ResponseWriter, r *http.Request) { panic("secret detail") })
	api.HandleFunc("GET /things", func(w http.ResponseWriter, r *http.Request) {})
	api.Handle("/", httpx.NotFoundHandler())
	srv := httptest.NewServer(ops.Handler(api))
	t.Cleanup(srv.Close)

	tests := []struct {
		path       string
		reqID      string
		wantStatus int
		wantCode   string
	}{
		{"/things?x=1", "", 200, ""},
		{"/readyz", "", 200, ""},
		{"/metrics", "", 200, ""},
		{"/boom", "abc-123", 500, "internal"},
		{"/nope", "", 404, "not_found"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+tt.path, nil)
		if tt.reqID != "" {
			req.Header.Set(httpx.RequestIDHeader, tt.reqID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tt.wantStatus {
			t.Errorf("%s: status %d, want %d", tt.path, resp.StatusCode, tt.wantStatus)
		}
		id := resp.Header.Get(httpx.RequestIDHeader)
		if id == "" || (tt.reqID != "" && id != tt.reqID) {
			t.Errorf("%s: request id %q, sent %q", tt.path, id, tt.reqID)
		}
		if tt.wantCode != "" {
			var b map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&b)
			if b["code"] != tt.wantCode || b["request_id"] != id {
				t.Errorf("%s: body %v", tt.path, b)
			}
			if strings.Contains(b["detail"].(string), "secret") {
				t.Errorf("panic text leaked: %v", b)
			}
		}
		resp.Body.Close()
	}
}

func TestRequestIDRejectsHostileValues(t *testing.T) {
	t.Parallel()
	var seen string
	h := httpx.RequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = problem.RequestID(r.Context())
	}))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set(httpx.RequestIDHeader, "bad id\nwith newline")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if seen == "" || strings.ContainsAny(seen, " \n") {
		t.Fatalf("request id = %q", seen)
	}
	if diff := cmp.Diff(seen, w.Header().Get(httpx.RequestIDHeader)); diff != "" {
		t.Errorf("echoed id (-want +got):\n%s", diff)
	}
}

func TestMethodNotAllowedIsProblem(t *testing.T) {
	t.Parallel()
	ops, err := httpx.NewOps()
	if err != nil {
		t.Fatal(err)
	}
	api := http.NewServeMux()
	api.HandleFunc("GET /deals/{id}", func(w http.ResponseWriter, r *http.Request) {})
	srv := httptest.NewServer(ops.Handler(api))
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest(http.MethodPatch, srv.URL+"/deals/1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&b)
	if resp.StatusCode != 405 || b["code"] != "method_not_allowed" || resp.Header.Get("Allow") == "" ||
		resp.Header.Get("Content-Type") != problem.ContentType {
		t.Fatalf("got %d %v %v", resp.StatusCode, resp.Header, b)
	}
}
