package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestCreateEmail(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noSecret: true})
	tok := e.user(7)
	body := map[string]any{
		"message_id": "<m-1@example.com>", "from": "Ann <ann@example.com>",
		"to": []string{"bob@example.org"}, "cc": []string{"Carol <carol@example.org>"},
		"subject": "Hello", "body_text": "Hi Bob,\n\n  see   you\ttomorrow.", "sent_at": "2026-03-01T10:00:00Z",
		"direction": "outbound",
	}

	r := e.do(http.MethodPost, "/emails", tok, body)

	if r.status != http.StatusCreated {
		t.Fatalf("status = %d, body %s", r.status, r.body)
	}
	ignore := cmpopts.IgnoreMapEntries(func(k string, _ any) bool { return k == "id" || k == "created_at" })
	wantData := map[string]any{
		"message_id": "<m-1@example.com>", "from": "ann@example.com",
		"to": []any{"bob@example.org"}, "cc": []any{"carol@example.org"},
		"subject": "Hello", "body_text": "Hi Bob,\n\n  see   you\ttomorrow.", "snippet": "Hi Bob, see you tomorrow.",
		"sent_at": "2026-03-01T10:00:00.000000Z", "direction": "outbound", "mailbox_id": nil,
	}
	want := map[string]any{"success": true, "data": wantData, "message": "email stored"}
	got := r.json(t)
	if diff := cmp.Diff(want, got, ignore); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	first := got["data"].(map[string]any)

	// The same message_id again, with or without angle brackets and with
	// other content, is a no-op returning the stored message.
	body["message_id"] = "m-1@example.com"
	body["subject"] = "Changed"
	r = e.do(http.MethodPost, "/emails", tok, body)
	if r.status != http.StatusOK {
		t.Fatalf("duplicate: status = %d, body %s", r.status, r.body)
	}
	want = map[string]any{"success": true, "data": first, "message": "email already stored"}
	if diff := cmp.Diff(want, r.json(t)); diff != "" {
		t.Errorf("duplicate body (-want +got):\n%s", diff)
	}

	r = e.do(http.MethodGet, fmt.Sprintf("/emails/%v", first["id"]), tok, nil)
	if r.status != http.StatusOK {
		t.Fatalf("get: status = %d, body %s", r.status, r.body)
	}
	if diff := cmp.Diff(map[string]any{"success": true, "data": first}, r.json(t)); diff != "" {
		t.Errorf("get body (-want +got):\n%s", diff)
	}
}

func TestCreateEmailDefaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noSecret: true})
	r := e.do(http.MethodPost, "/emails", e.user(1), `{"message_id":"d-1","from":"a@x.example"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("status = %d, body %s", r.status, r.body)
	}
	var m struct {
		To        []string `json:"to"`
		Cc        []string `json:"cc"`
		Direction string   `json:"direction"`
		SentAt    string   `json:"sent_at"`
		Snippet   string   `json:"snippet"`
	}
	r.data(t, &m)
	if m.To == nil || m.Cc == nil || len(m.To)+len(m.Cc) != 0 || m.Direction != "inbound" || m.SentAt == "" || m.Snippet != "" {
		t.Errorf("defaults = %+v, want empty to/cc, inbound, sent_at set", m)
	}
}

func TestCreateEmailBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noSecret: true})
	tok := e.user(1)
	huge := `{"message_id":"big","from":"a@x.example","body_text":"` + strings.Repeat("x", 1<<20) + `"}`
	tests := []struct {
		name        string
		token       string
		contentType string
		body        string
		status      int
		code        string
		fields      []string
	}{
		{name: "no token", body: `{}`, status: 401, code: "unauthenticated"},
		{name: "missing message_id and from", token: tok, body: `{"to":["b@y.example"]}`, status: 422, code: "validation_failed", fields: []string{"message_id", "from"}},
		{name: "blank message_id", token: tok, body: `{"message_id":"  ","from":"a@x.example"}`, status: 422, code: "validation_failed", fields: []string{"message_id"}},
		{name: "malformed from", token: tok, body: `{"message_id":"m","from":"ann at example"}`, status: 422, code: "validation_failed", fields: []string{"from"}},
		{name: "malformed to[1] and cc[0]", token: tok, body: `{"message_id":"m","from":"a@x.example","to":["b@y.example","bad"],"cc":["c@"]}`, status: 422, code: "validation_failed", fields: []string{"to[1]", "cc[0]"}},
		{name: "to not an array", token: tok, body: `{"message_id":"m","from":"a@x.example","to":"b@y.example"}`, status: 422, code: "validation_failed", fields: []string{"to"}},
		{name: "bad direction and sent_at", token: tok, body: `{"message_id":"m","from":"a@x.example","direction":"up","sent_at":"soon"}`, status: 422, code: "validation_failed", fields: []string{"direction", "sent_at"}},
		{name: "body over 1 MB", token: tok, body: huge, status: 413, code: "payload_too_large"},
		{name: "malformed JSON", token: tok, body: `{"message_id":`, status: 400, code: "malformed_json"},
		{name: "not JSON", token: tok, contentType: "text/plain", body: `x`, status: 415, code: "unsupported_media_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ct := tt.contentType
			if ct == "" {
				ct = "application/json"
			}
			r := e.doCT(http.MethodPost, "/emails", tt.token, ct, tt.body)
			wantProblem(t, r, tt.status, tt.code, tt.fields...)
		})
	}
}

func TestGetEmailNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noSecret: true})
	for _, path := range []string{"/emails/999", "/emails/abc", "/emails/0"} {
		wantProblem(t, e.do(http.MethodGet, path, e.user(1), nil), 404, "not_found")
	}
	wantProblem(t, e.do(http.MethodGet, "/nowhere", e.user(1), nil), 404, "not_found")
}

type page struct {
	Success     bool      `json:"success"`
	Data        []summary `json:"data"`
	CurrentPage int       `json:"current_page"`
	LastPage    int       `json:"last_page"`
	PerPage     int       `json:"per_page"`
	Total       int       `json:"total"`
}

type summary struct {
	MessageID string  `json:"message_id"`
	Snippet   string  `json:"snippet"`
	BodyText  *string `json:"body_text"`
}

func (e *env) post(tok, id, from string, to, cc []string, sentAt, body string) {
	e.t.Helper()
	r := e.do(http.MethodPost, "/emails", tok, map[string]any{
		"message_id": id, "from": from, "to": to, "cc": cc, "sent_at": sentAt, "body_text": body,
	})
	if r.status != http.StatusCreated {
		e.t.Fatalf("post %s: status = %d, body %s", id, r.status, r.body)
	}
}

func (e *env) linked(tok, path string) page {
	e.t.Helper()
	r := e.do(http.MethodGet, path, tok, nil)
	if r.status != http.StatusOK {
		e.t.Fatalf("GET %s: status = %d, body %s", path, r.status, r.body)
	}
	var p page
	if err := json.Unmarshal(r.body, &p); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func ids(p page) []string {
	out := []string{}
	for _, m := range p.Data {
		out = append(out, m.MessageID)
	}
	return out
}

func TestLinkedEmails(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noSecret: true})
	tok := e.user(3)
	e.post(tok, "m1", "bob@example.org", []string{"ann@example.com"}, nil, "2026-01-01T09:00:00Z", "first")
	e.post(tok, "m2", "ann@example.com", []string{"BOB@Example.org"}, nil, "2026-01-03T09:00:00Z", "  third \n\n message ")
	e.post(tok, "m3", "carol@example.org", []string{"dave@example.net"}, []string{"Bob <bob@EXAMPLE.org>"}, "2026-01-02T09:00:00Z", "second")
	e.post(tok, "m4", "carol@example.org", []string{"dave@example.net"}, nil, "2026-01-04T09:00:00Z", "unrelated")
	// Created after the messages: linking is by address at read time.
	e.contacts.set(10, ptr("Bob@example.org"))
	e.leads.set(20, ptr("dave@example.net"))

	got := e.linked(tok, "/contacts/10/linked-emails")
	want := page{Success: true, Data: []summary{
		{MessageID: "<m2>", Snippet: "third message"}, {MessageID: "<m3>", Snippet: "second"}, {MessageID: "<m1>", Snippet: "first"},
	}, CurrentPage: 1, LastPage: 1, PerPage: 25, Total: 3}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("contact's linked emails (-want +got):\n%s", diff)
	}

	got = e.linked(tok, "/contacts/10/linked-emails?page=2&per_page=2")
	want = page{Success: true, Data: []summary{{MessageID: "<m1>", Snippet: "first"}}, CurrentPage: 2, LastPage: 2, PerPage: 2, Total: 3}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("page 2 (-want +got):\n%s", diff)
	}
	got = e.linked(tok, "/contacts/10/linked-emails?page=9&per_page=500")
	if len(got.Data) != 0 || got.Total != 3 || got.PerPage != 100 || got.LastPage != 1 {
		t.Errorf("page past the end = %+v", got)
	}

	if diff := cmp.Diff([]string{"<m4>", "<m3>"}, ids(e.linked(tok, "/leads/20/linked-emails"))); diff != "" {
		t.Errorf("lead's linked emails (-want +got):\n%s", diff)
	}

	// A new message shows up at once for both.
	e.post(tok, "m5", "dave@example.net", []string{"bob@example.org"}, nil, "2026-01-05T09:00:00Z", "")
	if diff := cmp.Diff([]string{"<m5>", "<m2>", "<m3>", "<m1>"}, ids(e.linked(tok, "/contacts/10/linked-emails"))); diff != "" {
		t.Errorf("contact after a new message (-want +got):\n%s", diff)
	}
}

func TestLinkedEmailsEdgeCases(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noSecret: true})
	tok := e.user(3)
	e.post(tok, "m1", "bob@example.org", []string{"ann@example.com"}, nil, "2026-01-01T09:00:00Z", "x")
	e.contacts.set(1, nil)
	e.contacts.set(2, ptr(""))
	e.leads.set(3, nil)
	empty := page{Success: true, Data: []summary{}, CurrentPage: 1, LastPage: 1, PerPage: 25, Total: 0}
	for _, path := range []string{"/contacts/1/linked-emails", "/contacts/2/linked-emails", "/leads/3/linked-emails"} {
		if diff := cmp.Diff(empty, e.linked(tok, path)); diff != "" {
			t.Errorf("%s, a record without an email (-want +got):\n%s", path, diff)
		}
	}
}

func TestLinkedEmailsErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noSecret: true})
	tok := e.user(3)
	e.contacts.set(1, ptr("a@x.example"))
	e.leads.set(1, ptr("a@x.example"))
	tests := []struct {
		name   string
		path   string
		token  string
		status int
		code   string
		fields []string
	}{
		{"no token", "/contacts/1/linked-emails", "", 401, "unauthenticated", nil},
		{"unknown contact", "/contacts/404/linked-emails", tok, 404, "not_found", nil},
		{"unknown lead", "/leads/404/linked-emails", tok, 404, "not_found", nil},
		{"non-numeric id", "/contacts/abc/linked-emails", tok, 404, "not_found", nil},
		{"bad page", "/contacts/1/linked-emails?page=0&per_page=x", tok, 422, "validation_failed", []string{"page", "per_page"}},
		{"unknown sort", "/leads/1/linked-emails?sort_by=subject", tok, 422, "validation_failed", []string{"sort_by"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wantProblem(t, e.do(http.MethodGet, tt.path, tt.token, nil), tt.status, tt.code, tt.fields...)
		})
	}
}

func TestLinkedEmailsUpstreamDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noSecret: true})
	tok := e.user(3)
	e.contacts.setDown(true)
	e.leads.setDown(true)
	wantProblem(t, e.do(http.MethodGet, "/contacts/1/linked-emails", tok, nil), 503, "upstream_unavailable")
	wantProblem(t, e.do(http.MethodGet, "/leads/1/linked-emails", tok, nil), 503, "upstream_unavailable")
	// Not answering at all is the same 503.
	e.contacts.srv.Close()
	wantProblem(t, e.do(http.MethodGet, "/contacts/1/linked-emails", tok, nil), 503, "upstream_unavailable")
}
