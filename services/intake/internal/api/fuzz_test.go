package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fuzzcheck"
)

// validLead is a submission intake accepts; leadFields are the fields of
// the public form (website is the honeypot).
var (
	validLead = map[string]any{"first_name": "Ada", "last_name": "Lovelace", "email": "ada@example.com",
		"phone": "+1 555 0100", "company": "Analytical", "job_title": "Countess", "source": "web", "notes": "call me"}
	leadFields = []string{"first_name", "last_name", "email", "phone", "company", "job_title", "source", "notes", "website"}
)

// FuzzSubmit posts arbitrary bodies to POST /public/leads with a valid API
// key (raw bytes when splice is even, else validLead with field splice/2
// set to the fuzzed value), and fuzzes the Idempotency-Key and Origin
// headers with them.
// Whatever is sent: no panic, no 5xx, every 4xx is problem+json with a
// documented code for its status, and a 4xx stores nothing (no
// submission, no idempotency record).
func FuzzSubmit(f *testing.F) {
	e := newEnv(f)
	key := e.newKey(1, 100_000, "https://forms.example.com")
	h := e.srv.Config.Handler
	for _, s := range []struct{ body, idem, origin string }{
		{validBody, "", ""},
		{validBody, "order-1", "https://forms.example.com"},
		{`{"first_name":"Ada","last_name":"Lovelace","email":"ada@example.com","website":"http://spam.example"}`, "", ""},
		{`{"first_name":"Ada","last_name":"Lovelace","email":"not an email","phone":"+1 (555) 010-0000 ext. 9"}`, "", "https://evil.example"},
		{`{"first_name":"Ada","first_name":"Grace","last_name":"Hopper","email":"g@example.com","source":"web form"}`, "k", ""},
		{`{"first_name":1e400,"last_name":null,"email":["a@example.com"],"notes":{"a":[[[[[[[[[[[[[[[[[{}]]]]]]]]]]]]]]]]]}}`, "", ""},
		{`{"first_name":"\u0000","last_name":"\ud800","email":"a@example.com","company":"` + "\xff\xfe" + `"}`, "", "null"},
		{`{"first_name":"Ada","last_name":"L","email":"a@example.com"} {"x":1}`, "\xff", "https://forms.example.com\n"},
		{`null`, "", ""}, {`[]`, "", ""}, {`"x"`, "", ""}, {`{`, "", ""}, {``, "", ""},
	} {
		f.Add(uint8(0), []byte(s.body), s.idem, s.origin)
	}
	for i, v := range []string{`"\u0000"`, `""`, `null`, `1e400`, `"a@b"`, `"` + strings.Repeat("x", 300) + `"`,
		`"+1 (555) 010-0000"`, `["x"]`, "\xff", `"http://spam.example"`} {
		f.Add(uint8(2*i+1), []byte(v), "", "")
	}
	// accepted: an earlier input was, and its outcome may still be on its
	// way to the database: the forward and the write-behind recorder
	// update its submission later, several inputs later on a loaded
	// machine (inputs run one at a time per process).
	accepted := false
	f.Fuzz(func(t *testing.T, splice uint8, body []byte, idem, origin string) {
		if splice%2 == 1 {
			body = fuzzcheck.Splice(validLead, leadFields, splice/2, body)
		}
		req := httptest.NewRequest(http.MethodPost, "/public/leads", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", key)
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		before := fuzzcheck.Snapshot(t, e.db)
		if accepted {
			before = settled(t, e.db)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		what := fmt.Sprintf("POST /public/leads with %q (Idempotency-Key %q, Origin %q)", body, idem, origin)
		fuzzcheck.Answer(t, what, rec.Code, rec.Header(), rec.Body.Bytes())
		accepted = accepted || rec.Code < 300
		if rec.Code >= 400 {
			if diff := cmp.Diff(before, fuzzcheck.Snapshot(t, e.db)); diff != "" {
				t.Fatalf("%s: %d changed rows (-before +after):\n%s", what, rec.Code, diff)
			}
		}
	})
}

// settled is the snapshot once the write-behind recorder has caught up
// with the accepted submissions: two snapshots 5 ms apart agree.
func settled(t *testing.T, d *db.DB) map[string]string {
	t.Helper()
	prev := fuzzcheck.Snapshot(t, d)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		cur := fuzzcheck.Snapshot(t, d)
		if cmp.Equal(prev, cur) {
			return cur
		}
		prev = cur
	}
	t.Fatal("the database never settled")
	return nil
}
