package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/fuzzcheck"
)

// FuzzWriteBodies sends arbitrary JSON bodies to the webhooks endpoints
// that take one, POST /webhooks and PUT /webhooks/{id}: raw bytes when
// splice is even, else a valid body with field splice/2 set to the fuzzed
// value. Whatever the body: no panic, no 5xx, every 4xx is problem+json
// with a documented code for its status, and a 4xx changes no row.
func FuzzWriteBodies(f *testing.F) {
	e := newEnv(f, noWorkers())
	h := e.srv.Config.Handler
	valid := map[string]any{"url": "https://hooks.example.com/crm", "events": []string{"contact.created", "deal.updated"},
		"description": "fuzz", "active": true}
	first, _ := json.Marshal(valid)
	rec := fuzzcheck.Serve(h, http.MethodPost, "/webhooks", e.admin, first)
	if rec.Code != http.StatusCreated {
		f.Fatalf("create webhook: %d %s", rec.Code, rec.Body)
	}
	writes := []struct{ method, path string }{
		{http.MethodPost, "/webhooks"},
		{http.MethodPut, "/webhooks/" + strings.TrimSpace(idOf(rec.Body.Bytes()))},
	}
	for i, s := range []string{
		`{"url":"https://hooks.example.com/a","events":["*"]}`,
		`{"url":"ftp://hooks.example.com/","events":["contact.created"]}`,
		`{"url":"https://user:pw@hooks.example.com/","events":["contact.created"]}`,
		`{"url":"https://[::ffff:127.0.0.1]/","events":["contact.created"]}`,
		`{"url":"https://hooks.example.com/","events":[]}`,
		`{"url":"https://hooks.example.com/","events":["contact.exploded",null,1]}`,
		`{"url":"` + strings.Repeat("a", 3000) + `","events":["*"]}`,
		`{"url":"https://hooks.example.com/","events":["*"],"active":"yes","description":null}`,
		`{"url":"https://hooks.example.com/","url":"file:///etc/passwd","events":["*"]}`,
		`{"url":"https://hooks.example.com/","events":["*"]} {"x":1}`, `null`, `[]`, `"x"`, `{`, ``,
	} {
		f.Add(uint8(i), uint8(0), []byte(s))
	}
	for i, v := range []string{`"\u0000"`, `""`, `null`, `1e400`, `["*","*"]`, `"http://127.0.0.1:1/"`,
		`"gopher://x/"`, `"https://hooks.example.com/\r\nX: y"`, "\xff", `{"a":[[[[[[[[[[]]]]]]]]]]}`} {
		f.Add(uint8(i), uint8(2*i+1), []byte(v))
	}
	f.Fuzz(func(t *testing.T, which, splice uint8, body []byte) {
		w := writes[int(which)%len(writes)]
		if splice%2 == 1 {
			body = fuzzcheck.Splice(valid, nil, splice/2, body)
		}
		before := fuzzcheck.Snapshot(t, e.db)
		rec := fuzzcheck.Serve(h, w.method, w.path, e.admin, body)
		what := fmt.Sprintf("%s %s with %q", w.method, w.path, body)
		fuzzcheck.Answer(t, what, rec.Code, rec.Header(), rec.Body.Bytes())
		if rec.Code >= 400 {
			if diff := cmp.Diff(before, fuzzcheck.Snapshot(t, e.db)); diff != "" {
				t.Fatalf("%s: %d changed rows (-before +after):\n%s", what, rec.Code, diff)
			}
		}
	})
}

// idOf is the data.id of a record answer.
func idOf(body []byte) string {
	_, rest, _ := strings.Cut(string(body), `"id":`)
	id, _, _ := strings.Cut(rest, ",")
	return id
}
