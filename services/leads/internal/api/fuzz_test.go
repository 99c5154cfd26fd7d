package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzWriteBodies sends arbitrary JSON bodies to every write endpoint of
// leads (create, update, qualify, disqualify, notes, tasks): whatever the
// body, the answer is a 2xx or a 4xx problem+json, never a 5xx or a panic.
func FuzzWriteBodies(f *testing.F) {
	e := newEnv(f)
	id := e.createLead(map[string]any{"first_name": "Fuzz", "last_name": "Lead", "email": "fuzz@lead.test", "company": "Fuzz Co"})
	writes := []struct{ method, path string }{
		{http.MethodPost, "/leads"},
		{http.MethodPut, fmt.Sprintf("/leads/%d", id)},
		{http.MethodPost, fmt.Sprintf("/leads/%d/qualify", id)},
		{http.MethodPut, fmt.Sprintf("/leads/%d/disqualify", id)},
		{http.MethodPost, fmt.Sprintf("/leads/%d/notes", id)},
		{http.MethodPost, fmt.Sprintf("/leads/%d/tasks", id)},
	}
	for i, s := range []string{
		`{"first_name":"Ann","last_name":"Lee","email":"ann@x.test","company":"X","estimated_value":"100.00","source":"web"}`,
		`{"first_name":"","email":"nope","status":"qualified","estimated_value":"1e400"}`,
		`{"create_company":true,"create_deal":true,"deal_value":"-1","deal_stage_id":9223372036854775807}`,
		`{"reason":"` + strings.Repeat("x", 2000) + `"}`,
		`{"first_name":"\u0000","last_name":"\ud800"}`, `{"deal_value":{"a":[]}}`, `null`, `[]`, `{`, ``,
		`{"content":"note","title":"t","due_date":"2026-02-30","priority":"urgent"}`,
	} {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		w := writes[int(which)%len(writes)]
		// Not e.do: its helpers belong to the *testing.F of the set-up.
		req := httptest.NewRequest(w.method, w.path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+e.admin)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s with %q: status %d: %s", w.method, w.path, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/problem+json") {
			t.Fatalf("%s %s with %q: %d is not problem+json", w.method, w.path, body, rec.Code)
		}
	})
}
