package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/opencrm/crm/services/mail/imaptest"
	"github.com/opencrm/crm/services/mail/internal/mail"
)

// ownedMailbox stores a mailbox of owner directly (no sync is queued).
func (e *env) ownedMailbox(owner int64) int64 {
	e.t.Helper()
	mb, err := e.store.CreateMailbox(context.Background(), owner, mail.MailboxFields{
		Host: "imap.example.com", Port: 993, TLS: true, Username: fmt.Sprintf("user%d@example.com", owner),
		Folder: "INBOX", PasswordSealed: []byte("sealed"),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return mb.ID
}

// synced stores a message as the IMAP sync does (store.CreateMessage with
// the mailbox) and returns its id.
func (e *env) synced(mailboxID int64, messageID, from string, to []string, body string) int64 {
	e.t.Helper()
	m, created, err := e.store.CreateMessage(context.Background(), mail.NewMessage{
		MessageID: mail.NormalizeMessageID(messageID), From: from, To: to, Subject: "Subject of " + messageID, BodyText: body,
		SentAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), Direction: mail.Inbound, MailboxID: &mailboxID,
	})
	if err != nil || !created {
		e.t.Fatalf("store %s: created=%v err=%v", messageID, created, err)
	}
	return m.ID
}

// messageBody is the exact 200 answer of GET /emails/{id} for a message
// stored by synced (created_at is compared as present, not by value).
func messageBody(id int64, messageID, from string, to []string, body string, mailboxID any) map[string]any {
	toAny := []any{}
	for _, a := range to {
		toAny = append(toAny, a)
	}
	return map[string]any{"success": true, "data": map[string]any{
		"id": float64(id), "message_id": mail.NormalizeMessageID(messageID), "from": from, "to": toAny, "cc": []any{},
		"subject": "Subject of " + messageID, "snippet": body, "body_text": body,
		"sent_at": "2026-03-01T10:00:00.000000Z", "direction": "inbound", "mailbox_id": mailboxID,
		"created_at": "<set>",
	}}
}

// problemBody is an exact problem answer; request_id is filled in from the
// response's X-Request-Id when compared.
func problemBody(status int, code, detail string, fieldErrors ...map[string]any) map[string]any {
	b := map[string]any{
		"type": "/docs/problems#" + code, "title": http.StatusText(status), "status": float64(status),
		"detail": detail, "code": code,
	}
	if len(fieldErrors) > 0 {
		errs := []any{}
		for _, fe := range fieldErrors {
			errs = append(errs, fe)
		}
		b["errors"] = errs
	}
	return b
}

var emailNotFound = problemBody(404, "not_found", "email not found")

// wantExact compares the whole answer: status and body; a problem's
// request_id must be the response's X-Request-Id, and a message's
// created_at must be present.
func wantExact(t *testing.T, r result, status int, want map[string]any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
	got := r.json(t)
	if _, ok := want["code"]; ok {
		want = clone(want)
		want["request_id"] = r.header.Get("X-Request-Id")
		if want["request_id"] == "" {
			t.Error("no X-Request-Id")
		}
	}
	if d, ok := got["data"].(map[string]any); ok {
		if c, ok := d["created_at"].(string); ok && c != "" {
			d["created_at"] = "<set>"
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestPrivateMailboxMessages: a message synced from a mailbox is read by id
// only by the mailbox's owner and admins; every user reads it through a
// contact or lead it is linked to, and in the linked-email lists. Everyone
// else gets exactly the not_found of a message that does not exist.
func TestPrivateMailboxMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	const ann, bob = 1, 2
	annTok, bobTok, adminTok := e.user(ann), e.user(bob), e.admin(99)
	annBox := e.ownedMailbox(ann)
	e.contacts.set(10, ptr("Carol@Example.org"))
	e.contacts.set(11, ptr("nobody@example.net"))
	e.contacts.set(12, nil)
	e.leads.set(20, ptr("dave@example.net"))

	personal := e.synced(annBox, "personal@example.com", "mum@family.example", []string{"user1@example.com"}, "Dinner on Sunday?")
	withContact := e.synced(annBox, "deal@example.org", "carol@example.org", []string{"user1@example.com"}, "About the offer")
	withLead := e.synced(annBox, "lead@example.net", "user1@example.com", []string{"Dave@example.net"}, "Following up")
	// Posted through the API: no mailbox, readable by everyone.
	r := e.do(http.MethodPost, "/emails", bobTok, map[string]any{
		"message_id": "posted@example.com", "from": "bob@example.com", "to": []string{"x@example.com"},
		"subject": "Subject of posted@example.com", "body_text": "Posted", "sent_at": "2026-03-01T10:00:00Z",
	})
	if r.status != http.StatusCreated {
		t.Fatalf("post: status = %d, body %s", r.status, r.body)
	}
	var posted struct {
		ID int64 `json:"id"`
	}
	r.data(t, &posted)

	box := float64(annBox)
	personalBody := messageBody(personal, "personal@example.com", "mum@family.example", []string{"user1@example.com"}, "Dinner on Sunday?", box)
	contactBody := messageBody(withContact, "deal@example.org", "carol@example.org", []string{"user1@example.com"}, "About the offer", box)
	leadBody := messageBody(withLead, "lead@example.net", "user1@example.com", []string{"Dave@example.net"}, "Following up", box)
	postedBody := messageBody(posted.ID, "posted@example.com", "bob@example.com", []string{"x@example.com"}, "Posted", nil)
	path := func(id int64, query string) string { return fmt.Sprintf("/emails/%d%s", id, query) }

	tests := []struct {
		name   string
		token  string
		path   string
		status int
		want   map[string]any
	}{
		{"owner reads her unlinked message", annTok, path(personal, ""), 200, personalBody},
		{"admin reads any unlinked message", adminTok, path(personal, ""), 200, personalBody},
		{"another user gets not_found", bobTok, path(personal, ""), 404, emailNotFound},
		{"exactly as for a message that does not exist", bobTok, path(999999, ""), 404, emailNotFound},
		{"another user, a linked message by id alone", bobTok, path(withContact, ""), 404, emailNotFound},
		{"another user through the linked contact", bobTok, path(withContact, "?contact_id=10"), 200, contactBody},
		{"another user through the linked lead", bobTok, path(withLead, "?lead_id=20"), 200, leadBody},
		{"through a contact it is not linked to", bobTok, path(personal, "?contact_id=11"), 404, emailNotFound},
		{"through a contact without email", bobTok, path(personal, "?contact_id=12"), 404, emailNotFound},
		{"the owner too, through a record it is not linked to", annTok, path(personal, "?contact_id=11"), 404, emailNotFound},
		{"through a record that does not exist", bobTok, path(personal, "?contact_id=404"), 404, problemBody(404, "not_found", "contact not found")},
		{"a posted message is read by everyone", annTok, path(posted.ID, ""), 200, postedBody},
		{"bad contact_id", bobTok, path(personal, "?contact_id=x"), 422, problemBody(422, "validation_failed", "one or more fields are invalid",
			map[string]any{"field": "contact_id", "message": "must be a positive integer"})},
		{"contact_id and lead_id", bobTok, path(withContact, "?contact_id=10&lead_id=20"), 422, problemBody(422, "validation_failed", "one or more fields are invalid",
			map[string]any{"field": "lead_id", "message": "cannot be combined with contact_id"})},
	}
	t.Run("reads", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				wantExact(t, e.do(http.MethodGet, tt.path, tt.token, nil), tt.status, tt.want)
			})
		}
	})

	// The linked-email lists are the linked messages, for every user; the
	// unlinked one is in none.
	for _, tt := range []struct {
		path string
		want []string
	}{
		{"/contacts/10/linked-emails", []string{"<deal@example.org>"}},
		{"/leads/20/linked-emails", []string{"<lead@example.net>"}},
		{"/contacts/11/linked-emails", []string{}},
	} {
		if diff := cmp.Diff(tt.want, ids(e.linked(bobTok, tt.path))); diff != "" {
			t.Errorf("%s for another user (-want +got):\n%s", tt.path, diff)
		}
	}

	// Disconnecting the mailbox keeps its messages private to their owner.
	if r := e.do(http.MethodDelete, fmt.Sprintf("/mailboxes/%d", annBox), annTok, nil); r.status != http.StatusOK {
		t.Fatalf("delete mailbox: status = %d, body %s", r.status, r.body)
	}
	orphan := clone(personalBody)
	orphan["data"] = clone(orphan["data"].(map[string]any))
	orphan["data"].(map[string]any)["mailbox_id"] = nil
	wantExact(t, e.do(http.MethodGet, path(personal, ""), bobTok, nil), 404, emailNotFound)
	wantExact(t, e.do(http.MethodGet, path(personal, ""), annTok, nil), 200, orphan)
	wantExact(t, e.do(http.MethodGet, path(personal, ""), adminTok, nil), 200, orphan)
}

// TestCreateEmailDuplicateOfPrivate: POST /emails with the message_id of a
// message synced from someone else's mailbox answers 200 "already stored"
// as any duplicate, but names the message without its content; the stored
// copy is not changed and does not become readable.
func TestCreateEmailDuplicateOfPrivate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	annTok, bobTok, adminTok := e.user(1), e.user(2), e.admin(99)
	annBox := e.ownedMailbox(1)
	id := e.synced(annBox, "private@example.com", "mum@family.example", []string{"user1@example.com"}, "Dinner on Sunday?")
	stored := messageBody(id, "private@example.com", "mum@family.example", []string{"user1@example.com"}, "Dinner on Sunday?", float64(annBox))
	stored["message"] = "email already stored"
	post := map[string]any{"message_id": "<private@example.com>", "from": "bob@example.com", "body_text": "guess"}

	tests := []struct {
		name  string
		token string
		want  map[string]any
	}{
		{"another user", bobTok, map[string]any{"success": true, "message": "email already stored",
			"data": map[string]any{"id": float64(id), "message_id": "<private@example.com>"}}},
		{"the owner", annTok, stored},
		{"an admin", adminTok, stored},
	}
	t.Run("posts", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				wantExact(t, e.do(http.MethodPost, "/emails", tt.token, post), 200, tt.want)
			})
		}
	})
	wantExact(t, e.do(http.MethodGet, fmt.Sprintf("/emails/%d", id), bobTok, nil), 404, emailNotFound)
	delete(stored, "message")
	wantExact(t, e.do(http.MethodGet, fmt.Sprintf("/emails/%d", id), annTok, nil), 200, stored)
}

// TestSyncedMessagesArePrivate runs the real IMAP sync: what it stores is
// the owner's, not another user's, until read through a linked record.
func TestSyncedMessagesArePrivate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{worker: true, interval: time.Hour})
	srv := imaptest.Start(t, imapUser, imapPass)
	srv.Append(t, "INBOX", fixture(t, "plain.eml"))
	owner, other := e.user(5), e.user(6)
	mb := e.createMailbox(owner, map[string]any{
		"host": srv.Host, "port": srv.Port, "tls": false, "username": imapUser, "password": imapPass,
	})
	e.waitMailbox(owner, mb.ID, "sync", func(m mailbox) bool { return m.Status == "ok" && m.LastUID == 1 })
	var id int64
	if err := e.db.QueryRow(context.Background(), "SELECT id FROM messages WHERE mailbox_id = $1", mb.ID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/emails/%d", id)

	wantExact(t, e.do(http.MethodGet, path, other, nil), 404, emailNotFound)
	ignore := cmpopts.IgnoreMapEntries(func(k string, _ any) bool { return k == "created_at" })
	ownerView := e.do(http.MethodGet, path, owner, nil)
	if ownerView.status != http.StatusOK {
		t.Fatalf("owner: status = %d, body %s", ownerView.status, ownerView.body)
	}
	// plain.eml is from bob@example.org: through that contact, anyone.
	e.contacts.set(1, ptr("bob@example.org"))
	viaContact := e.do(http.MethodGet, path+"?contact_id=1", other, nil)
	if viaContact.status != http.StatusOK {
		t.Fatalf("through the contact: status = %d, body %s", viaContact.status, viaContact.body)
	}
	if diff := cmp.Diff(ownerView.json(t), viaContact.json(t), ignore); diff != "" {
		t.Errorf("through the contact vs the owner's view (-want +got):\n%s", diff)
	}
}
