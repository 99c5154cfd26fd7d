package api_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/opencrm/crm/pkg/contract/leadsapi"
)

// duplicatesOf asks the internal duplicate lookup for email.
func (e *env) duplicatesOf(email string) resp {
	e.t.Helper()
	req := newRequest(http.MethodGet, leadsapi.PathDuplicates+"?"+url.Values{"email": {email}}.Encode(), "")
	req.Header.Set("X-Internal-Token", secret)
	return e.serve(req)
}

// TestDuplicateOf: an address names the oldest contact holding it, else
// the oldest lead, compared ignoring case and surrounding blanks; an
// address nobody holds answers null.
func TestDuplicateOf(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.createLead(map[string]any{"first_name": "Lia", "last_name": "One", "email": "lia@example.com"})
	e.createLead(map[string]any{"first_name": "Lia", "last_name": "Two", "email": "LIA@example.com"})
	e.contacts.PutContact(9002, map[string]any{"first_name": "Cy", "last_name": "Later", "email": "cy@example.com"})
	e.contacts.PutContact(9001, map[string]any{"first_name": "Cy", "last_name": "First", "email": "CY@example.com"})
	e.createLead(map[string]any{"first_name": "Cy", "last_name": "Lead", "email": "cy@example.com"})
	for _, tc := range []struct{ email, want string }{
		{" Lia@Example.com ", `{"data":{"lead_id":` + strconv.FormatInt(first, 10) + `}}`},
		{"cy@example.com", `{"data":{"contact_id":9001}}`},
		{"nobody@example.com", `{"data":null}`},
	} {
		r := e.duplicatesOf(tc.email)
		if r.status != http.StatusOK || string(r.body) != tc.want+"\n" {
			t.Errorf("duplicates of %q: %d %s, want 200 %s", tc.email, r.status, r.body, tc.want)
		}
	}
}

// TestDuplicateOfRefusals: a blank or overlong address is a 422 on email;
// contacts being down is a 503 (a lead match alone could hide the contact
// the address repeats); the route needs the internal secret.
func TestDuplicateOfRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	long := make([]byte, 256)
	for i := range long {
		long[i] = 'a'
	}
	for _, tc := range []struct{ email, msg string }{
		{"  ", "is required"},
		{string(long), "must be at most 255 characters"},
	} {
		wantExactProblem(t, e.duplicatesOf(tc.email), problemJSON(422, "validation_failed", "one or more fields are invalid",
			[2]string{"email", tc.msg}))
	}
	req := newRequest(http.MethodGet, leadsapi.PathDuplicates+"?email=a@b.example", "")
	wantProblem(t, e.serve(req), http.StatusUnauthorized, "unauthenticated")
	e.contacts.Close()
	wantProblem(t, e.duplicatesOf("a@b.example"), http.StatusServiceUnavailable, "upstream_unavailable")
}
