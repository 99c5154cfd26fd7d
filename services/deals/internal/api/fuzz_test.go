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
// deals (stages, deals, quotes): whatever the body, the answer is a 2xx or
// a 4xx problem+json, never a 5xx or a panic.
func FuzzWriteBodies(f *testing.F) {
	e := newEnv(f)
	d := e.createDeal(map[string]any{"title": "Fuzz", "value": "10.00"})
	writes := []struct{ method, path, token string }{
		{http.MethodPost, "/deals", e.user},
		{http.MethodPut, fmt.Sprintf("/deals/%d", d.ID), e.user},
		{http.MethodPost, fmt.Sprintf("/deals/%d/quotes", d.ID), e.user},
		{http.MethodPost, "/deal-stages", e.admin},
		{http.MethodPut, "/deal-stages/1", e.admin},
		{http.MethodPost, fmt.Sprintf("/deals/%d/notes", d.ID), e.user},
	}
	for i, s := range []string{
		`{"title":"Deal","value":"1234.50","currency":"EUR","stage_id":1,"expected_close_date":"2026-12-31"}`,
		`{"title":"x","value":"1e400","probability":101,"company_id":-1}`,
		`{"title":"q","line_items":[{"description":"a","quantity":"2","unit_price":"-0.001","discount":"200"}]}`,
		`{"name":"Won","probability":100,"position":9223372036854775807,"is_won":true}`,
		`{"title":"\u0000","value":"NaN"}`, `{"value":{"a":1}}`, `null`, `[]`, `{`, ``,
		`{"content":"note","due_date":"2026-02-30"}`,
	} {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		w := writes[int(which)%len(writes)]
		// Not e.do: its helpers belong to the *testing.F of the set-up.
		req := httptest.NewRequest(w.method, w.path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+w.token)
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
