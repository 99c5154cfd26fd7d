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

// FuzzWriteBodies sends arbitrary JSON bodies to every mail endpoint that
// takes one: POST /emails (which also links the message to the contacts
// and leads its addresses belong to), POST /mailboxes and PUT
// /mailboxes/{id}; raw bytes when splice is even, else a valid body with
// field splice/2 set to the fuzzed value. Whatever the body: no panic, no
// 5xx, every 4xx is problem+json with a documented code for its status,
// and a 4xx changes no row.
func FuzzWriteBodies(f *testing.F) {
	e := newEnv(f, envOpts{})
	e.contacts.set(1, ptr("ann@example.com"))
	e.leads.set(1, ptr("bob@example.com"))
	h := e.srv.Config.Handler
	user := e.user(7)
	rec := fuzzcheck.Serve(h, http.MethodPost, "/mailboxes", user,
		[]byte(`{"host":"imap.example.com","username":"fuzz","password":"secret"}`))
	var mb struct {
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &mb) != nil {
		f.Fatalf("create mailbox: %d %s", rec.Code, rec.Body)
	}
	writes := []struct {
		method, path string
		valid        map[string]any
	}{
		{http.MethodPost, "/emails", map[string]any{"message_id": "<a1@example.com>", "from": "Ann <ann@example.com>",
			"to": []string{"bob@example.com"}, "cc": []string{}, "subject": "Hi", "body_text": "hello",
			"sent_at": "2026-11-22T03:10:26Z", "direction": "inbound"}},
		{http.MethodPost, "/mailboxes", map[string]any{"host": "imap.example.org", "port": 993, "tls": true,
			"username": "u", "password": "p", "folder": "INBOX"}},
		{http.MethodPut, fmt.Sprintf("/mailboxes/%d", mb.Data.ID), map[string]any{"host": "imap.example.com",
			"port": 993, "tls": true, "username": "fuzz", "password": "secret", "folder": "Archive"}},
	}
	for i, s := range []string{
		`{"message_id":"<a1@example.com>","from":"Ann <ann@example.com>","to":["bob@example.com"],"cc":[],"subject":"Hi","body_text":"hello","sent_at":"2026-11-22T03:10:26Z","direction":"inbound"}`,
		`{"host":"127.0.0.1","port":143,"tls":false,"username":"u","password":"p","folder":"INBOX/Archive"}`,
		`{"host":"imap.example.org","port":993,"username":"fuzz"}`,
		`{"message_id":"x","from":"\"a\\\"b\" <a@example.com>","to":["undisclosed-recipients:;"],"sent_at":"0000-01-01T00:00:00+23:59"}`,
		`{"host":"[::1]","port":70000,"username":"\u0000","password":"a\u2028b","folder":"\u0000"}`,
		`{"host":"-bad-.example","port":-1,"tls":"yes","username":["u"],"password":null}`,
		`{"message_id":"\ud800","from":"` + "\xff@example.com" + `","subject":"` + "\xc0\x80" + `","sent_at":"9999-12-31T23:59:59.999999999-23:59"}`,
		`{"message_id":"m","from":"a@example.com","to":null,"direction":"sideways","sent_at":1e400}`,
		`{"host":"a","host":"b","username":"u","password":"p"}`,
		`{"message_id":"m","from":"a@example.com","body_text":{"a":[[[[[[[[[[[[[[[[[[[{}]]]]]]]]]]]]]]]]]]]}}`,
		`{"host":"h","username":"u","password":"p"} {"x":1}`, `null`, `[]`, `"x"`, `{`, ``,
	} {
		f.Add(uint8(i), uint8(0), []byte(s))
	}
	for i, v := range []string{`"\u0000"`, `""`, `null`, `1e400`, `65536`, `["a@example.com","\u0000"]`,
		`"0000-01-01T00:00:00-23:59"`, `"[::ffff:1.2.3.4]"`, "\xff", `"a\r\nb"`} {
		f.Add(uint8(i), uint8(2*i+1), []byte(v))
	}
	for _, s := range []struct {
		which      int
		field, raw string
	}{
		{0, "sent_at", `"9999-12-31T23:59:59-23:59"`}, {0, "sent_at", `"0000-01-01T00:00:00+23:59"`},
		{0, "sent_at", `"9999-12-31T23:59:59.9999999Z"`}, {0, "message_id", `"<` + strings.Repeat("m", 2000) + `>"`},
		{0, "to", `["` + strings.Repeat(`a@example.com","`, 600) + `b@example.com"]`}, {0, "from", `"ann@example.com, bob@example.com"`},
		{1, "host", `"` + strings.Repeat("a.", 127) + `a"`}, {1, "username", `"a\u0000b"`}, {1, "folder", `"INBOX\r\nA1 LOGOUT"`},
		{2, "password", `""`}, {2, "tls", `false`}, {2, "port", `0`},
	} {
		f.Add(uint8(s.which), fuzzcheck.FieldSeed(writes[s.which].valid, s.field), []byte(s.raw))
	}
	n := 0 // inputs so far in this process
	f.Fuzz(func(t *testing.T, which, splice uint8, body []byte) {
		w := writes[int(which)%len(writes)]
		if n++; splice%2 == 1 {
			valid := w.valid
			if w.path == "/emails" {
				// A known message_id answers the stored copy (200): keep
				// reaching the create path.
				valid = fuzzcheck.WithUnique(valid, "message_id", "<fuzz-%d@example.com>", n)
			}
			body = fuzzcheck.Splice(valid, nil, splice/2, body)
		}
		before := fuzzcheck.Snapshot(t, e.db)
		rec := fuzzcheck.Serve(h, w.method, w.path, user, body)
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
