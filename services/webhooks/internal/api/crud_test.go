package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/problem/problemtest"
)

// TestCreateRefusesInvalidInput: a refused input is 422 validation_failed
// naming the field, under the service's URL policy and resolver (every
// rule of the input: TestValidateCreate in package webhooks), and stores
// or changes nothing.
func TestCreateRefusesInvalidInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, strict(), noWorkers())
	e.dns.set("hooks.example.com", "93.184.216.34")
	e.dns.set("inside.example.com", "10.1.2.3")
	ok := "https://hooks.example.com/crm"
	tests := []struct {
		name  string
		body  string
		field string
		msg   string
	}{
		{"url missing", `{"events":["*"]}`, "url", "is required"},
		{"http when not allowed", `{"url":"http://hooks.example.com/","events":["*"]}`, "url", "must use https"},
		{"name resolving inside", `{"url":"https://inside.example.com/","events":["*"]}`, "url", "must not point to a private, loopback or otherwise reserved address"},
		{"event unknown", `{"url":"` + ok + `","events":["contact.created","contact.exploded"]}`, "events[1]", `must be an event type (see the webhooks section) or "*"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(http.MethodPost, "/webhooks", e.admin, tt.body)
			b := problemtest.Want(t, r.status, r.header, r.body, http.StatusUnprocessableEntity, "validation_failed", tt.field)
			if b.Errors[0].Message != tt.msg {
				t.Errorf("message = %q, want %q", b.Errors[0].Message, tt.msg)
			}
		})
	}
	r := e.do(http.MethodGet, "/webhooks", e.admin, nil)
	if got := decode[page[hook]](t, r).Total; got != 0 {
		t.Fatalf("%d webhooks stored after refused creates", got)
	}
	// The same rules hold on update, and a refused update changes nothing.
	h := e.create(ok, "*")
	r = e.do(http.MethodPut, "/webhooks/"+strconv.FormatInt(h.ID, 10), e.admin, `{"url":"https://127.0.0.1/","events":[]}`)
	problemtest.Want(t, r.status, r.header, r.body, http.StatusUnprocessableEntity, "validation_failed", "url", "events")
	got := decode[record[hook]](t, e.do(http.MethodGet, "/webhooks/"+strconv.FormatInt(h.ID, 10), e.admin, nil)).Data
	if got.URL != ok {
		t.Fatalf("url after refused update = %q", got.URL)
	}
}

func TestAuthorization(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	h := e.create("http://127.0.0.1:1/x", "*")
	id := strconv.FormatInt(h.ID, 10)
	body := `{"url":"http://127.0.0.1:1/y","events":["*"]}`
	// The scoped tokens act as one service user (99), who owns this one.
	r := e.do(http.MethodPost, "/webhooks", e.scoped("webhooks:write"), body)
	if r.status != http.StatusCreated {
		t.Fatalf("create with a token: %d %s", r.status, r.body)
	}
	own := strconv.FormatInt(decode[record[hook]](t, r).Data.ID, 10)
	tests := []struct {
		name, method, path, token string
		body                      any
		status                    int
		code                      string
	}{
		{"no token", "GET", "/webhooks", "", nil, 401, "unauthenticated"},
		{"person without admin", "GET", "/webhooks", e.issuer.User(t, 3), nil, 403, "forbidden"},
		{"person without admin writes", "POST", "/webhooks", e.issuer.User(t, 3), body, 403, "forbidden"},
		{"person without admin reads the feed", "GET", "/events", e.issuer.User(t, 3), nil, 403, "forbidden"},
		{"token without webhooks scope", "GET", "/webhooks", e.scoped("contacts:write"), nil, 403, "insufficient_scope"},
		{"read token writes", "POST", "/webhooks", e.scoped("webhooks:read"), body, 403, "insufficient_scope"},
		{"read token deletes", "DELETE", "/webhooks/" + id, e.scoped("webhooks:read"), nil, 403, "insufficient_scope"},
		{"read token retries", "POST", "/webhooks/" + id + "/deliveries/1/retry", e.scoped("webhooks:read"), nil, 403, "insufficient_scope"},
		{"feed without scope", "GET", "/events", e.scoped("deals:read"), nil, 403, "insufficient_scope"},
		{"read token reads its own", "GET", "/webhooks/" + own, e.scoped("webhooks:read"), nil, 200, ""},
		{"read token reads the feed", "GET", "/events", e.scoped("webhooks:read"), nil, 200, ""},
		{"write token reads", "GET", "/webhooks", e.scoped("webhooks:write"), nil, 200, ""},
		{"write token creates", "POST", "/webhooks", e.scoped("webhooks:write"), body, 201, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(tt.method, tt.path, tt.token, tt.body)
			if tt.code == "" {
				if r.status != tt.status {
					t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
				}
				return
			}
			problemtest.Want(t, r.status, r.header, r.body, tt.status, tt.code)
			if tt.code == "insufficient_scope" && !strings.Contains(r.header.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
				t.Errorf("WWW-Authenticate = %q", r.header.Get("WWW-Authenticate"))
			}
		})
	}
}

func TestCRUD(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	r := e.do(http.MethodPost, "/webhooks", e.admin,
		`{"url":"http://127.0.0.1:9/a","events":["deal.updated","contact.created","contact.created"],"description":"billing"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	a := decode[record[hook]](t, r)
	if a.Message != "Webhook created" || !strings.HasPrefix(a.Data.Secret, "whsec_") || a.Data.SecretPrefix != "whsec_" || !a.Data.Active {
		t.Fatalf("created %+v", a)
	}
	if diff := cmp.Diff([]string{"contact.created", "deal.updated"}, a.Data.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	b := e.create("http://127.0.0.1:9/b", "*")

	got := decode[record[hook]](t, e.do(http.MethodGet, "/webhooks/"+strconv.FormatInt(a.Data.ID, 10), e.admin, nil)).Data
	if got.Secret != "" || got.Description != "billing" || got.URL != "http://127.0.0.1:9/a" {
		t.Fatalf("get %+v (the secret is shown once)", got)
	}
	list := decode[page[hook]](t, e.do(http.MethodGet, "/webhooks", e.admin, nil))
	if list.Total != 2 || list.Data[0].ID != b.ID || list.Data[1].ID != a.Data.ID || list.Data[0].Secret != "" {
		t.Fatalf("list (newest first) %+v", list)
	}

	path := "/webhooks/" + strconv.FormatInt(a.Data.ID, 10)
	r = e.do(http.MethodPut, path, e.admin, `{"active":false}`)
	up := decode[record[hook]](t, r).Data
	if r.status != 200 || up.Active || up.URL != "http://127.0.0.1:9/a" || up.Description != "billing" || len(up.Events) != 2 {
		t.Fatalf("partial update: %d %+v", r.status, up)
	}
	r = e.do(http.MethodPut, path, e.admin, `{"events":["*"],"description":""}`)
	up = decode[record[hook]](t, r).Data
	if up.Active || up.Description != "" || len(up.Events) != 1 || up.Events[0] != "*" {
		t.Fatalf("second update: %+v", up)
	}

	r = e.do(http.MethodDelete, path, e.admin, nil)
	if r.status != 200 || decode[record[any]](t, r).Message != "Webhook deleted" {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		r = e.do(m, path, e.admin, `{}`)
		problemtest.Want(t, r.status, r.header, r.body, 404, "not_found")
	}
	r = e.do("GET", path+"/deliveries", e.admin, nil)
	problemtest.Want(t, r.status, r.header, r.body, 404, "not_found")
	r = e.do("POST", "/webhooks/abc/test", e.admin, nil)
	problemtest.Want(t, r.status, r.header, r.body, 404, "not_found")
}
