package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/authtest"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/mail/internal/api"
	"github.com/opencrm/crm/services/mail/internal/mail"
	"github.com/opencrm/crm/services/mail/internal/store"
)

// newPrivacyEnv serves the mail API as the service does, with the
// internal privacy routes, on the schema the service migrates.
func newPrivacyEnv(t *testing.T) *env {
	t.Helper()
	d := testdb.New(t, "mail", store.Migrate, store.MigrationSets...)
	st, err := store.New(d)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: d, store: st, issuer: authtest.New(t)}
	svc, err := mail.NewService(st, contactsapi.New("http://127.0.0.1:1", internalSecret),
		leadsapi.New("http://127.0.0.1:1", internalSecret), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.New(api.Deps{Service: svc, Verifier: e.issuer.Verifier(t),
		Privacy: &api.Privacy{Part: st, DB: d, InternalSecret: internalSecret}})
	if err != nil {
		t.Fatal(err)
	}
	ops, err := httpx.NewOps()
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(ops.Handler(h))
	t.Cleanup(e.srv.Close)
	return e
}

// internal posts body to an internal route with secret.
func (e *env) internal(path, secret string, body any) result {
	e.t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+path, bytes.NewReader(raw))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set(auth.InternalHeader, secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return result{status: resp.StatusCode, header: resp.Header, body: b}
}

// TestPrivacyRoutesRefuse: the routes need the internal secret and an
// address; the answers are the exact problems.
func TestPrivacyRoutesRefuse(t *testing.T) {
	t.Parallel()
	e := newPrivacyEnv(t)
	for _, tt := range []struct {
		name   string
		path   string
		secret string
		body   any
		status int
		want   string
	}{
		{"export without the secret", privacyapi.PathExport, "", map[string]any{"email": "ann@example.com"}, http.StatusUnauthorized,
			`{"type":"/docs/problems#unauthenticated","title":"Unauthorized","status":401,"detail":"internal route","code":"unauthenticated"}`},
		{"erase with a wrong secret", privacyapi.ErasurePath(1), "wrong-secret-0123456789", map[string]any{"email": "ann@example.com"},
			http.StatusUnauthorized,
			`{"type":"/docs/problems#unauthenticated","title":"Unauthorized","status":401,"detail":"internal route","code":"unauthenticated"}`},
		{"export of an empty address", privacyapi.PathExport, internalSecret, map[string]any{"email": " "}, http.StatusUnprocessableEntity,
			`{"type":"/docs/problems#validation_failed","title":"Unprocessable Entity","status":422,"detail":"one or more fields are invalid","code":"validation_failed","errors":[{"field":"email","message":"is required"}]}`},
		{"erase of an empty address", privacyapi.ErasurePath(1), internalSecret, map[string]any{"email": ""}, http.StatusUnprocessableEntity,
			`{"type":"/docs/problems#validation_failed","title":"Unprocessable Entity","status":422,"detail":"one or more fields are invalid","code":"validation_failed","errors":[{"field":"email","message":"is required"}]}`},
		{"erase of a bad id", privacyapi.PathErasures + "/x", internalSecret, map[string]any{"email": "ann@example.com"}, http.StatusNotFound,
			`{"type":"/docs/problems#not_found","title":"Not Found","status":404,"detail":"resource not found","code":"not_found"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.internal(tt.path, tt.secret, tt.body)
			if r.status != tt.status || r.header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("status %d %s, want %d problem+json", r.status, r.header.Get("Content-Type"), tt.status)
			}
			wantProblemBody(t, r, tt.want)
		})
	}
}

// TestPrivacyExportRoute answers the person's messages.
func TestPrivacyExportRoute(t *testing.T) {
	t.Parallel()
	e := newPrivacyEnv(t)
	m := e.privacyMessage("<one@x>", "Ann@Example.com", "owner@crm.example")
	e.privacyMessage("<two@x>", "carol@example.org", "owner@crm.example")

	r := e.internal(privacyapi.PathExport, internalSecret, privacyapi.Subject{Email: "ann@example.com", LeadIDs: []int64{8}})
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	want := `{"data":{"data":{"emails":[{"id":` + itoa(m.ID) + `,"message_id":"<one@x>","subject":"Hi","from":"Ann@Example.com",` +
		`"to":["owner@crm.example"],"cc":[],"sent_at":"2026-03-01T10:00:00.000000Z","direction":"inbound","body_text":"Ann's words",` +
		`"contact_ids":[],"lead_ids":[8]}]}}}`
	wantJSON(t, want, r.body)
}

// wantJSON compares two JSON documents as values.
func wantJSON(t *testing.T, want string, got []byte) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("body %q: %v", got, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

// wantProblemBody checks a problem body member by member against want,
// its request_id present (a new one per request) and left out of the
// comparison.
func wantProblemBody(t *testing.T, r result, want string) {
	t.Helper()
	var got, w map[string]any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if id, _ := got["request_id"].(string); id == "" {
		t.Errorf("body %s has no request_id", r.body)
	}
	delete(got, "request_id")
	if diff := cmp.Diff(w, got); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func (e *env) privacyMessage(id, from string, to ...string) mail.Message {
	e.t.Helper()
	m, _, err := e.store.CreateMessage(context.Background(), mail.NewMessage{MessageID: id, From: from, To: to,
		Subject: "Hi", BodyText: "Ann's words", SentAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), Direction: mail.Inbound})
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// TestPrivacyEraseOnce: an erasure runs once per id. Its repeat answers
// the first receipt and changes nothing (a message of the person stored
// since stays); the same id for another person is a conflict; a new id
// erases what is there now.
func TestPrivacyEraseOnce(t *testing.T) {
	t.Parallel()
	e := newPrivacyEnv(t)
	// The CRM's own address: a message between it and the person is
	// theirs alone.
	if _, err := e.store.CreateMailbox(context.Background(), 1, mail.MailboxFields{Host: "imap.example.com", Port: 993,
		TLS: true, Username: "owner@crm.example", Folder: "INBOX", PasswordSealed: []byte("sealed")}); err != nil {
		t.Fatal(err)
	}
	first := e.privacyMessage("<one@x>", "ann@example.com", "owner@crm.example")
	ann := privacyapi.Subject{Email: "ann@example.com", ContactIDs: []int64{3}}
	receipt := func(erased int64) string {
		return `{"data":{"receipt":{"context":"mail","status":"completed","erased":{"aliases":0,"emails":` + itoa(erased) +
			`},"redacted":{"emails":0},"kept":[]}}}`
	}

	for i, want := range []string{receipt(1), receipt(1)} {
		r := e.internal(privacyapi.ErasurePath(7), internalSecret, ann)
		if r.status != http.StatusOK {
			t.Fatalf("call %d: status %d: %s", i, r.status, r.body)
		}
		if diff := cmp.Diff(want, string(bytes.TrimSpace(r.body))); diff != "" {
			t.Errorf("call %d (-want +got):\n%s", i, diff)
		}
		if i == 0 {
			if _, err := e.store.Message(context.Background(), first.ID); err == nil {
				t.Fatal("the person's message is still stored")
			}
			// Stored after the erasure: its repeat must not touch it.
			e.privacyMessage("<later@x>", "ann@example.com", "owner@crm.example")
		}
	}
	var n int
	if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM messages WHERE message_id = '<later@x>'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("the repeat erased a later message: %d rows, %v", n, err)
	}

	r := e.internal(privacyapi.ErasurePath(7), internalSecret, privacyapi.Subject{Email: "bob@example.com"})
	if r.status != http.StatusConflict {
		t.Errorf("same id, another person: status %d: %s", r.status, r.body)
	}
	// pkg/privacy answers idempotency.Once's conflict as it is.
	wantProblemBody(t, r, `{"type":"/docs/problems#erasure_reused","title":"Conflict","status":409,`+
		`"detail":"this erasure was asked about other records before","code":"erasure_reused"}`)

	r = e.internal(privacyapi.ErasurePath(8), internalSecret, ann)
	if diff := cmp.Diff(receipt(1), string(bytes.TrimSpace(r.body))); r.status != http.StatusOK || diff != "" {
		t.Errorf("a new erasure: status %d (-want +got):\n%s", r.status, diff)
	}
}
