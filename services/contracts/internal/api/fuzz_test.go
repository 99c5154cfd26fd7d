package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/fuzzcheck"
)

// FuzzWriteBodies sends arbitrary JSON bodies to every contracts write
// endpoint taking one: templates, contracts (status changes included),
// notes and tasks; raw bytes when splice is even, else a valid body with
// field splice/2 set to the fuzzed value. Whatever the body: no panic, no
// 5xx, every 4xx is problem+json with a documented code for its status,
// and a 4xx changes no row.
func FuzzWriteBodies(f *testing.F) {
	e := newEnv(f)
	e.deals.set(1, mergeFor(1, "Fuzz deal", "Acme"))
	h := e.srv.Config.Handler
	tpl := setupID(f, h, http.MethodPost, "/contract-templates", e.admin,
		`{"name":"Fuzz","content":"<p>{{deal.title}}</p>","number_prefix":"FZ"}`)
	body := fmt.Sprintf(`{"deal_id":1,"template_id":%d,"title":"Fuzzed"}`, tpl)
	updated := setupID(f, h, http.MethodPost, "/contracts", e.user, body)
	parent := setupID(f, h, http.MethodPost, "/contracts", e.user, body)
	task := setupID(f, h, http.MethodPost, fmt.Sprintf("/contracts/%d/tasks", parent), e.user, `{"title":"Call"}`)
	writes := []struct {
		method, path, token string
		valid               map[string]any
	}{
		{http.MethodPost, "/contract-templates", e.admin, map[string]any{"name": "Licence", "content": "<p>{{deal.title}}</p>",
			"number_prefix": "LIC", "default_term_months": 12, "header_left": "{{contract.number}}", "header_center": "",
			"header_right": "", "footer_left": "", "footer_center": "Page {{page}} of {{pages}}", "footer_right": ""}},
		{http.MethodPut, fmt.Sprintf("/contract-templates/%d", tpl), e.admin, map[string]any{"name": "Fuzz",
			"content": "<p>{{deal.title}}</p>", "number_prefix": "FZ", "default_term_months": 24}},
		{http.MethodPost, "/contracts", e.user, map[string]any{"deal_id": 1, "template_id": tpl, "title": "Fuzzed",
			"start_date": "2026-01-01", "end_date": "2026-12-31", "auto_renew": false, "partner_ref": "P-1",
			"content": "<p>x</p>", "term_months": 12}},
		{http.MethodPut, fmt.Sprintf("/contracts/%d", updated), e.user, map[string]any{"title": "Fuzzed",
			"start_date": "2026-01-01", "end_date": "2026-12-31", "auto_renew": true, "partner_ref": "P-2",
			"term_months": 12, "status": "draft"}},
		{http.MethodPost, fmt.Sprintf("/contracts/%d/notes", parent), e.user, map[string]any{"content": "note"}},
		{http.MethodPost, fmt.Sprintf("/contracts/%d/tasks", parent), e.user, map[string]any{"title": "Call",
			"description": "d", "due_date": "2026-12-31", "due_time": "09:30", "priority": "high", "status": "open",
			"assigned_to": 2, "contact_id": 1, "company_id": 1, "deal_id": 1, "lead_id": 1, "contract_id": parent}},
		{http.MethodPut, fmt.Sprintf("/contracts/%d/tasks/%d", parent, task), e.user, map[string]any{"title": "Done",
			"status": "completed", "priority": "low"}},
	}
	for i, s := range []string{
		`{"name":"Licence","content":"<h1>{{contract.title}}</h1><script>x</script>","number_prefix":"LIC","default_term_months":12,"footer_center":"Page {{page}} of {{pages}}"}`,
		`{"name":"Renamed","content":"{{unknown.tag}}","number_prefix":"bad prefix!","header_left":null}`,
		body,
		`{"title":"Renewed","start_date":"2026-01-31","end_date":"2026-02-30","term_months":2147483648,"auto_renew":true,"status":"active"}`,
		`{"content":"note"}`,
		`{"title":"Follow up","due_date":"2026-12-31","due_time":"25:61","priority":"urgent","assigned_to":-1,"contract_id":9223372036854775807}`,
		`{"title":"Done","status":"completed","deal_id":null}`,
		`{"status":"terminated"}`, `{"status":"draft","status":"archived"}`,
		`{"deal_id":1e400,"template_id":"1","title":["x"],"term_months":-1}`,
		`{"title":"\u0000","content":"\ud800","partner_ref":"` + "\xff\xfe" + `"}`,
		`{"name":{"a":[[[[[[[[[[[[[[[[[[[[[[[[{}]]]]]]]]]]]]]]]]]]]]]]]}}`,
		`{"title":"x"} {"title":"y"}`, `null`, `[]`, `"x"`, `{`, ``,
	} {
		f.Add(uint8(i), uint8(0), []byte(s))
	}
	for i, v := range []string{`9223372036854775807`, `-1`, `null`, `"\u0000"`, `""`, `1e400`, `"2026-02-30"`,
		`"{{contract.title}}<script>"`, `"99:99"`, `{"a":1}`, "\xff", `2147483648`} {
		f.Add(uint8(i), uint8(2*i+1), []byte(v))
	}
	for _, s := range []struct {
		which      int
		field, raw string
	}{
		{0, "default_term_months", `2147483648`}, {0, "number_prefix", `"A-_0123456789abcdefghij"`},
		{1, "default_term_months", `-9223372036854775808`},
		{2, "term_months", `2147483648`}, {2, "start_date", `"0001-01-01"`}, {2, "end_date", `"99999-12-31"`},
		{2, "deal_id", `9223372036854775807`}, {2, "template_id", `9223372036854775807`},
		{3, "term_months", `-2147483649`}, {3, "status", `"executed"`}, {3, "end_date", `"1900-02-29"`},
		{5, "due_date", `"0000-01-01"`}, {5, "assigned_to", `9223372036854775807`}, {5, "contract_id", `-1`},
		{6, "priority", `"urgent"`}, {6, "status", `"cancelled"`},
	} {
		f.Add(uint8(s.which), fuzzcheck.FieldSeed(writes[s.which].valid, s.field), []byte(s.raw))
	}
	f.Fuzz(func(t *testing.T, which, splice uint8, body []byte) {
		w := writes[int(which)%len(writes)]
		if splice%2 == 1 {
			body = fuzzcheck.Splice(w.valid, nil, splice/2, body)
		}
		req := httptest.NewRequest(w.method, w.path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+w.token)
		before := fuzzcheck.Snapshot(t, e.db)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		what := fmt.Sprintf("%s %s with %q", w.method, w.path, body)
		t.Logf("%s: %d", what, rec.Code)
		fuzzcheck.Answer(t, what, rec.Code, rec.Header(), rec.Body.Bytes())
		if rec.Code >= 400 {
			if diff := cmp.Diff(before, fuzzcheck.Snapshot(t, e.db)); diff != "" {
				t.Fatalf("%s: %d changed rows (-before +after):\n%s", what, rec.Code, diff)
			}
		}
	})
}

// setupID sends a JSON write during a fuzz target's set-up and returns
// the created record's id.
func setupID(tb testing.TB, h http.Handler, method, path, token, body string) int64 {
	tb.Helper()
	rec := serve(h, method, path, token, "application/json", bytes.NewReader([]byte(body)))
	var out struct {
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &out) != nil || out.Data.ID == 0 {
		tb.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
	}
	return out.Data.ID
}

func serve(h http.Handler, method, path, token, contentType string, body io.Reader) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, body)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
