package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// fuzzWrites are the contacts service's write endpoints taking a JSON
// body; %d is replaced by an existing record's id.
var fuzzWrites = []struct{ method, path string }{
	{http.MethodPost, "/contacts"},
	{http.MethodPut, "/contacts/%d"},
	{http.MethodPost, "/companies"},
	{http.MethodPut, "/companies/%d"},
	{http.MethodPost, "/contacts/%d/notes"},
	{http.MethodPost, "/contacts/%d/tasks"},
}

// FuzzWriteBodies sends arbitrary JSON bodies to every write endpoint:
// whatever the body, the answer is a 2xx or a 4xx problem+json, never a
// 5xx (a driver error leaking from an unchecked value) or a panic.
func FuzzWriteBodies(f *testing.F) {
	e := newEnv(f)
	contact := dataOf(f, e.do(f, http.MethodPost, "/contacts", e.admin, map[string]any{"first_name": "Ada", "last_name": "Lovelace"}))
	company := dataOf(f, e.do(f, http.MethodPost, "/companies", e.admin, map[string]any{"name": "Acme"}))
	ids := []int64{int64(contact["id"].(float64)), int64(company["id"].(float64)), int64(contact["id"].(float64)), int64(contact["id"].(float64))}
	for i, seed := range []string{
		`{"first_name":"Grace","last_name":"Hopper","email":"grace@example.com","company_id":1}`,
		`{"first_name":"","last_name":"x","email":"not an email","tags":["a","a"]}`,
		`{"name":"Acme","website":"javascript:alert(1)","annual_revenue":"1e400"}`,
		`{"first_name":"\u0000","last_name":"\ud800"}`,
		`{"owner_id":-1,"team_id":9223372036854775807,"visibility":"everyone"}`,
		`{"content":"note","due_date":"2026-02-30","title":"t"}`,
		`{"first_name":{"nested":[1,2,{}]},"last_name":null}`,
		`[]`, `null`, `"x"`, `{`, ``,
	} {
		f.Add(uint8(i), []byte(seed))
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		w := fuzzWrites[int(which)%len(fuzzWrites)]
		path := w.path
		if bytes.Contains([]byte(path), []byte("%d")) {
			path = fmt.Sprintf(path, ids[int(which)%len(ids)])
		}
		req := httptest.NewRequest(w.method, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+e.admin)
		r := e.serve(t, req)
		checkAnswer(t, w.method+" "+path, body, r)
	})
}

// FuzzImportUpload sends arbitrary multipart bodies (boundary, headers,
// file name and content all fuzzed) to POST /contacts/import.
func FuzzImportUpload(f *testing.F) {
	e := newEnv(f)
	for _, seed := range []struct{ boundary, body string }{
		{"b", "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"c.csv\"\r\n\r\nfirst_name,last_name\r\nAda,Lovelace\r\n--b--\r\n"},
		{"b", "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"c.exe\"\r\n\r\nMZ\r\n--b--\r\n"},
		{"b", "--b\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nx\r\n--b--\r\n"},
		{"b", "--b\r\nContent-Disposition: form-data; name=\"file\"; filename*=UTF-8''%e2%82%ac.csv\r\n\r\nfirst_name\r\n"},
		{"", "no multipart at all"},
		{"x", "--x--\r\n"},
	} {
		f.Add(seed.boundary, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, boundary string, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/contacts/import", bytes.NewReader(body))
		req.Header.Set("Content-Type", "multipart/form-data; boundary=\""+boundary+"\"")
		req.Header.Set("Authorization", "Bearer "+e.admin)
		checkAnswer(t, "POST /contacts/import", body, e.serve(t, req))
	})
}

// checkAnswer fails on a 5xx or on an error answer that is not problem+json.
func checkAnswer(t *testing.T, what string, body []byte, r resp) {
	t.Helper()
	if r.Status >= 500 {
		t.Fatalf("%s with %q: status %d: %s", what, body, r.Status, r.Raw)
	}
	if r.Status >= 400 && r.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%s with %q: status %d with content type %q", what, body, r.Status, r.Header.Get("Content-Type"))
	}
}
