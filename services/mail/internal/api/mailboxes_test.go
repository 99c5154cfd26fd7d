package api_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/opencrm/crm/services/mail/imaptest"
	"github.com/opencrm/crm/services/mail/internal/mail"
)

const (
	imapUser = "ann@example.com"
	imapPass = "imap-secret-pass-42"
)

type mailbox struct {
	ID           int64   `json:"id"`
	OwnerID      int64   `json:"owner_id"`
	Host         string  `json:"host"`
	Port         int     `json:"port"`
	TLS          bool    `json:"tls"`
	Username     string  `json:"username"`
	Folder       string  `json:"folder"`
	Status       string  `json:"status"`
	LastError    *string `json:"last_error"`
	LastSyncedAt *string `json:"last_synced_at"`
	UIDValidity  uint32  `json:"uidvalidity"`
	LastUID      uint32  `json:"last_uid"`
}

func (e *env) createMailbox(tok string, body map[string]any) mailbox {
	e.t.Helper()
	r := e.do(http.MethodPost, "/mailboxes", tok, body)
	if r.status != http.StatusCreated {
		e.t.Fatalf("create mailbox: status = %d, body %s", r.status, r.body)
	}
	var mb mailbox
	r.data(e.t, &mb)
	return mb
}

func (e *env) getMailbox(tok string, id int64) mailbox {
	e.t.Helper()
	r := e.do(http.MethodGet, fmt.Sprintf("/mailboxes/%d", id), tok, nil)
	if r.status != http.StatusOK {
		e.t.Fatalf("get mailbox: status = %d, body %s", r.status, r.body)
	}
	var mb mailbox
	r.data(e.t, &mb)
	return mb
}

func TestMailboxCRUD(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	ann, bob, admin := e.user(1), e.user(2), e.admin(99)

	r := e.do(http.MethodPost, "/mailboxes", ann, map[string]any{
		"host": "imap.example.com", "username": imapUser, "password": imapPass,
	})
	if r.status != http.StatusCreated {
		t.Fatalf("create: status = %d, body %s", r.status, r.body)
	}
	if bytes.Contains(r.body, []byte(imapPass)) || bytes.Contains(r.body, []byte("password")) {
		t.Errorf("create answer reveals the password: %s", r.body)
	}
	var mb mailbox
	r.data(t, &mb)
	want := mailbox{ID: mb.ID, OwnerID: 1, Host: "imap.example.com", Port: 993, TLS: true, Username: imapUser,
		Folder: "INBOX", Status: "pending"}
	if diff := cmp.Diff(want, mb); diff != "" {
		t.Errorf("created (-want +got):\n%s", diff)
	}
	var sealed []byte
	if err := e.db.QueryRow(context.Background(), "SELECT password_sealed FROM mailboxes WHERE id = $1", mb.ID).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte(imapPass)) || len(sealed) < len(imapPass)+28 {
		t.Errorf("stored password is not sealed: %q", sealed)
	}

	bobs := e.createMailbox(bob, map[string]any{"host": "10.0.0.5", "port": 1143, "tls": false, "username": "bob", "password": "x", "folder": "Sent"})

	list := func(tok string) []int64 {
		r := e.do(http.MethodGet, "/mailboxes", tok, nil)
		if r.status != http.StatusOK {
			t.Fatalf("list: status = %d, body %s", r.status, r.body)
		}
		var l []mailbox
		r.data(t, &l)
		ids := []int64{}
		for _, m := range l {
			ids = append(ids, m.ID)
		}
		return ids
	}
	if diff := cmp.Diff([]int64{mb.ID}, list(ann)); diff != "" {
		t.Errorf("ann's list (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int64{mb.ID, bobs.ID}, list(admin)); diff != "" {
		t.Errorf("admin's list (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int64{}, list(e.user(3))); diff != "" {
		t.Errorf("empty list (-want +got):\n%s", diff)
	}

	// Another user's mailbox does not exist for you; an admin sees it.
	path := fmt.Sprintf("/mailboxes/%d", mb.ID)
	wantProblem(t, e.do(http.MethodGet, path, bob, nil), 404, "not_found")
	wantProblem(t, e.do(http.MethodPut, path, bob, map[string]any{"host": "h.example", "username": "u"}), 404, "not_found")
	wantProblem(t, e.do(http.MethodDelete, path, bob, nil), 404, "not_found")
	wantProblem(t, e.do(http.MethodPost, path+"/sync", bob, nil), 404, "not_found")
	if got := e.getMailbox(admin, mb.ID); got.ID != mb.ID {
		t.Errorf("admin GET = %+v", got)
	}

	sealedNow := func() []byte {
		var b []byte
		if err := e.db.QueryRow(context.Background(), "SELECT password_sealed FROM mailboxes WHERE id = $1", mb.ID).Scan(&b); err != nil {
			t.Fatal(err)
		}
		return b
	}

	// PUT keeps absent port, tls, folder and password; the same server and
	// account need no password (here only the folder changes).
	r = e.do(http.MethodPut, path, ann, map[string]any{"host": "imap.example.com", "username": imapUser, "folder": "Archive"})
	if r.status != http.StatusOK {
		t.Fatalf("update: status = %d, body %s", r.status, r.body)
	}
	var upd mailbox
	r.data(t, &upd)
	want.Folder = "Archive"
	if diff := cmp.Diff(want, upd); diff != "" {
		t.Errorf("updated (-want +got):\n%s", diff)
	}
	if !bytes.Equal(sealed, sealedNow()) {
		t.Error("PUT without password changed the stored password")
	}

	// Another server or account needs the password again (see
	// TestMailboxUpdateNeedsPassword); with it, the new one is sealed.
	r = e.do(http.MethodPut, path, ann, map[string]any{"host": "imap2.example.com", "username": "ann2", "password": "new-" + imapPass})
	if r.status != http.StatusOK {
		t.Fatalf("update with password: status = %d, body %s", r.status, r.body)
	}
	r.data(t, &upd)
	want.Host, want.Username = "imap2.example.com", "ann2"
	if diff := cmp.Diff(want, upd); diff != "" {
		t.Errorf("updated with password (-want +got):\n%s", diff)
	}
	if after := sealedNow(); bytes.Equal(sealed, after) || bytes.Contains(after, []byte(imapPass)) {
		t.Errorf("PUT with a password did not seal the new one: %q", after)
	}

	r = e.do(http.MethodPost, path+"/sync", ann, nil)
	if r.status != http.StatusOK {
		t.Fatalf("sync: status = %d, body %s", r.status, r.body)
	}
	if m := r.json(t)["message"]; m != "sync queued" {
		t.Errorf("sync message = %v", m)
	}

	r = e.do(http.MethodDelete, path, ann, nil)
	if r.status != http.StatusOK {
		t.Fatalf("delete: status = %d, body %s", r.status, r.body)
	}
	if diff := cmp.Diff(map[string]any{"success": true, "message": "mailbox disconnected"}, r.json(t)); diff != "" {
		t.Errorf("delete body (-want +got):\n%s", diff)
	}
	wantProblem(t, e.do(http.MethodGet, path, ann, nil), 404, "not_found")
	wantProblem(t, e.do(http.MethodDelete, path, ann, nil), 404, "not_found")
}

func TestMailboxBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	tok := e.user(1)
	mb := e.createMailbox(tok, map[string]any{"host": "imap.example.com", "username": "u", "password": "p"})
	path := fmt.Sprintf("/mailboxes/%d", mb.ID)
	tests := []struct {
		name, method, path, token, body string
		status                          int
		code                            string
		fields                          []string
	}{
		{"no token", "GET", "/mailboxes", "", "", 401, "unauthenticated", nil},
		{"create without fields", "POST", "/mailboxes", tok, `{}`, 422, "validation_failed", []string{"host", "username", "password"}},
		{"create with bad host and port", "POST", "/mailboxes", tok, `{"host":"a b","port":0,"username":"u","password":"p"}`, 422, "validation_failed", []string{"host", "port"}},
		{"port of the wrong type", "POST", "/mailboxes", tok, `{"host":"h.example","port":"993","username":"u","password":"p"}`, 422, "validation_failed", []string{"port"}},
		{"tls of the wrong type", "POST", "/mailboxes", tok, `{"host":"h.example","tls":"yes","username":"u","password":"p"}`, 422, "validation_failed", []string{"tls"}},
		{"update without host", "PUT", path, tok, `{"username":"u"}`, 422, "validation_failed", []string{"host"}},
		{"update clearing the password", "PUT", path, tok, `{"host":"h.example","username":"u","password":""}`, 422, "validation_failed", []string{"password"}},
		{"malformed JSON", "POST", "/mailboxes", tok, `{"host"`, 400, "malformed_json", nil},
		{"unknown mailbox", "GET", "/mailboxes/424242", tok, "", 404, "not_found", nil},
		{"non-numeric id", "GET", "/mailboxes/x", tok, "", 404, "not_found", nil},
		{"sync of an unknown mailbox", "POST", "/mailboxes/424242/sync", tok, "", 404, "not_found", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var body any
			if tt.body != "" {
				body = tt.body
			}
			wantProblem(t, e.do(tt.method, tt.path, tt.token, body), tt.status, tt.code, tt.fields...)
		})
	}
}

// TestMailboxUpdateNeedsPassword: a PUT that would make the next sync send
// the stored password to another host, port or account, or in clear, needs
// the password; without it the answer is 422 and nothing changes, whoever
// asks (the owner or an admin). Other changes keep the stored password.
func TestMailboxUpdateNeedsPassword(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	owner, admin := e.user(1), e.admin(99)
	required := problemBody(422, "validation_failed", "one or more fields are invalid",
		map[string]any{"field": "password", "message": "is required when host, port or username change or tls is turned off"})
	same := map[string]any{"host": "imap.example.com", "port": 993, "tls": true, "username": imapUser}
	with := func(kv ...any) map[string]any {
		b := clone(same)
		for i := 0; i < len(kv); i += 2 {
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	tests := []struct {
		name   string
		token  string
		body   map[string]any
		status int
		want   map[string]any // the problem; nil for 200
		// changed: the settings after a 200 differ from the mailbox's.
		changed func(*mailbox)
		// resealed: a 200 stored a new password.
		resealed bool
	}{
		{name: "admin moves the host, tls off (the attack)", token: admin, body: with("host", "evil.example", "tls", false), status: 422, want: required},
		{name: "owner moves the host", token: owner, body: with("host", "evil.example"), status: 422, want: required},
		{name: "host differs only in case", token: owner, body: with("host", "IMAP.example.com"), status: 422, want: required},
		{name: "port", token: owner, body: with("port", 994), status: 422, want: required},
		{name: "username", token: admin, body: with("username", "other@example.com"), status: 422, want: required},
		{name: "tls turned off", token: owner, body: with("tls", false), status: 422, want: required},
		{name: "tls off, port absent", token: admin, body: map[string]any{"host": "imap.example.com", "username": imapUser, "tls": false}, status: 422, want: required},
		{name: "an invalid host is the only error", token: owner, body: with("host", "a b"), status: 422,
			want: problemBody(422, "validation_failed", "one or more fields are invalid", map[string]any{"field": "host", "message": "must be a host name or IP address"})},
		{name: "same settings", token: owner, body: same, status: 200},
		{name: "same settings, absent port and tls", token: admin, body: map[string]any{"host": "imap.example.com", "username": imapUser}, status: 200},
		{name: "folder only", token: admin, body: with("folder", "Archive"), status: 200, changed: func(m *mailbox) { m.Folder = "Archive" }},
		{name: "admin moves the host with a password", token: admin, body: with("host", "imap2.example.com", "tls", false, "password", "p2"), status: 200,
			changed: func(m *mailbox) { m.Host, m.TLS = "imap2.example.com", false }, resealed: true},
		{name: "owner changes only the password", token: owner, body: with("password", "p2"), status: 200, resealed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mb := e.createMailbox(owner, map[string]any{"host": "imap.example.com", "username": imapUser, "password": imapPass})
			var sealed []byte
			if err := e.db.QueryRow(context.Background(), "SELECT password_sealed FROM mailboxes WHERE id = $1", mb.ID).Scan(&sealed); err != nil {
				t.Fatal(err)
			}

			r := e.do(http.MethodPut, fmt.Sprintf("/mailboxes/%d", mb.ID), tt.token, tt.body)

			if tt.want != nil {
				wantExact(t, r, tt.status, tt.want)
			} else if r.status != tt.status {
				t.Fatalf("status = %d, want %d; body %s", r.status, tt.status, r.body)
			}
			want := mb
			if tt.changed != nil {
				tt.changed(&want)
			}
			got := e.getMailbox(owner, mb.ID)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("mailbox after the PUT (-want +got):\n%s", diff)
			}
			var after []byte
			if err := e.db.QueryRow(context.Background(), "SELECT password_sealed FROM mailboxes WHERE id = $1", mb.ID).Scan(&after); err != nil {
				t.Fatal(err)
			}
			if resealed := !bytes.Equal(sealed, after); resealed != tt.resealed {
				t.Errorf("password resealed = %v, want %v", resealed, tt.resealed)
			}
		})
	}
}

func TestMailboxesNeedSecretKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noSecret: true})
	tok := e.user(1)
	wantProblem(t, e.do(http.MethodGet, "/mailboxes", tok, nil), 503, "upstream_unavailable")
	wantProblem(t, e.do(http.MethodPost, "/mailboxes", tok, `{"host":"h.example","username":"u","password":"p"}`), 503, "upstream_unavailable")
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "imapsync", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (e *env) waitMailbox(tok string, id int64, what string, cond func(mailbox) bool) mailbox {
	e.t.Helper()
	var mb mailbox
	eventually(e.t, what, func() bool {
		mb = e.getMailbox(tok, id)
		return cond(mb)
	})
	return mb
}

func TestMailboxSyncEndToEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{worker: true, interval: time.Hour})
	srv := imaptest.Start(t, imapUser, imapPass)
	for _, f := range []string{"plain.eml", "alternative.eml", "latin1.eml", "broken.eml"} {
		srv.Append(t, "INBOX", fixture(t, f))
	}
	tok := e.user(5)
	e.contacts.set(1, ptr("BOB@example.org"))
	e.leads.set(2, ptr("rene@example.fr"))

	// Wrong password first: the sync records the error, nothing crashes.
	mb := e.createMailbox(tok, map[string]any{
		"host": srv.Host, "port": srv.Port, "tls": false, "username": imapUser, "password": "wrong-" + imapPass,
	})
	got := e.waitMailbox(tok, mb.ID, "first sync fails", func(m mailbox) bool { return m.Status == "error" })
	if got.LastError == nil || *got.LastError != "login failed: the server rejected the username or password" {
		t.Errorf("last_error = %v", got.LastError)
	}
	raw := e.do(http.MethodGet, fmt.Sprintf("/mailboxes/%d", mb.ID), tok, nil).body
	if bytes.Contains(raw, []byte(imapPass)) {
		t.Errorf("mailbox answer reveals the password: %s", raw)
	}

	// Fixing the password queues a sync that succeeds.
	r := e.do(http.MethodPut, fmt.Sprintf("/mailboxes/%d", mb.ID), tok, map[string]any{
		"host": srv.Host, "username": imapUser, "password": imapPass,
	})
	if r.status != http.StatusOK {
		t.Fatalf("update: status = %d, body %s", r.status, r.body)
	}
	got = e.waitMailbox(tok, mb.ID, "sync after the password fix", func(m mailbox) bool { return m.Status == "ok" })
	want := mailbox{ID: mb.ID, OwnerID: 5, Host: srv.Host, Port: srv.Port, Username: imapUser, Folder: "INBOX",
		Status: "ok", UIDValidity: 1, LastUID: 4}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(mailbox{}, "LastSyncedAt")); diff != "" {
		t.Errorf("mailbox (-want +got):\n%s", diff)
	}
	if got.LastSyncedAt == nil {
		t.Error("last_synced_at not set")
	}
	if diff := cmp.Diff([]string{"<alt-1@example.org>", "<plain-1@example.com>"}, ids(e.linked(tok, "/contacts/1/linked-emails"))); diff != "" {
		t.Errorf("contact's synced emails (-want +got):\n%s", diff)
	}
	lead := e.linked(tok, "/leads/2/linked-emails")
	if diff := cmp.Diff([]summary{{MessageID: "<latin1-1@example.fr>", Snippet: "Café à Paris, déjà vu."}}, lead.Data); diff != "" {
		t.Errorf("lead's synced emails (-want +got):\n%s", diff)
	}

	// New mail, then POST /sync: only the new message is fetched.
	srv.Append(t, "INBOX", []byte("From: bob@example.org\r\nTo: ann@example.com\r\nSubject: later\r\n"+
		"Message-ID: <later@example.org>\r\nDate: Sat, 07 Mar 2026 10:00:00 +0000\r\n\r\nSee you later.\r\n"))
	r = e.do(http.MethodPost, fmt.Sprintf("/mailboxes/%d/sync", mb.ID), tok, nil)
	if r.status != http.StatusOK {
		t.Fatalf("sync: status = %d, body %s", r.status, r.body)
	}
	e.waitMailbox(tok, mb.ID, "manual sync", func(m mailbox) bool { return m.LastUID == 5 })
	if diff := cmp.Diff([]string{"<later@example.org>", "<alt-1@example.org>", "<plain-1@example.com>"}, ids(e.linked(tok, "/contacts/1/linked-emails"))); diff != "" {
		t.Errorf("contact's emails after the manual sync (-want +got):\n%s", diff)
	}

	// Server down: the error is recorded; back up: the next sync succeeds.
	srv.Stop()
	if r := e.do(http.MethodPost, fmt.Sprintf("/mailboxes/%d/sync", mb.ID), tok, nil); r.status != http.StatusOK {
		t.Fatalf("sync: status = %d, body %s", r.status, r.body)
	}
	got = e.waitMailbox(tok, mb.ID, "sync while down", func(m mailbox) bool { return m.Status == "error" })
	if got.LastError == nil || !strings.Contains(*got.LastError, "was refused") {
		t.Errorf("last_error = %v", got.LastError)
	}
	srv.Restart(t)
	srv.Append(t, "INBOX", fixture(t, "html-noid.eml"))
	if r := e.do(http.MethodPost, fmt.Sprintf("/mailboxes/%d/sync", mb.ID), tok, nil); r.status != http.StatusOK {
		t.Fatalf("sync: status = %d, body %s", r.status, r.body)
	}
	got = e.waitMailbox(tok, mb.ID, "sync after the server is back", func(m mailbox) bool { return m.Status == "ok" })
	if got.LastUID != 6 || got.LastError != nil {
		t.Errorf("after recovery: %+v", got)
	}
}

func TestScheduledSync(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{worker: true, interval: time.Second})
	srv := imaptest.Start(t, imapUser, imapPass)
	srv.Append(t, "INBOX", fixture(t, "plain.eml"))
	sealer, err := mail.NewSealer("test-secret-key-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := sealer.Seal(imapPass)
	if err != nil {
		t.Fatal(err)
	}
	// Stored directly, so no sync is queued: only the scheduler can run it.
	mb, err := e.store.CreateMailbox(context.Background(), 1, mail.MailboxFields{
		Host: srv.Host, Port: srv.Port, Username: imapUser, Folder: "INBOX", PasswordSealed: sealed,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.waitMailbox(e.user(1), mb.ID, "scheduled sync", func(m mailbox) bool { return m.Status == "ok" && m.LastUID == 1 })
	srv.Append(t, "INBOX", fixture(t, "alternative.eml"))
	e.waitMailbox(e.user(1), mb.ID, "next scheduled sync", func(m mailbox) bool { return m.LastUID == 2 })
}

// TestMailboxWrongTLSSetting: a mailbox whose tls setting does not match
// its port shows an error naming the likely mistake soon after it is
// connected, and nothing else about it changes. With tls off on an
// implicit-TLS port (993) the server waits for a TLS handshake and sends
// no greeting: the mailbox used to stay pending for 60 s and then blame
// the server. The worker runs with the default 8 s greeting timeout.
func TestMailboxWrongTLSSetting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{worker: true, interval: time.Hour})
	tok := e.user(5)
	e.contacts.set(1, ptr("bob@example.org"))
	tests := []struct {
		name string
		srv  *imaptest.Server
		tls  bool
		want string // %s is the server's address
	}{
		{"tls off on an implicit-TLS port", imaptest.StartTLS(t, imapUser, imapPass), false,
			"no IMAP greeting from %s within 8s: is the port expecting TLS (tls: true)?"},
		{"tls on a plain port", imaptest.Start(t, imapUser, imapPass), true,
			"the server at %s answered without TLS: is the port expecting plain IMAP (tls: false)?"},
	}
	start := time.Now()
	created := make([]mailbox, len(tests))
	for i, tt := range tests {
		tt.srv.Append(t, "INBOX", fixture(t, "plain.eml"))
		created[i] = e.createMailbox(tok, map[string]any{
			"host": tt.srv.Host, "port": tt.srv.Port, "tls": tt.tls, "username": imapUser, "password": imapPass,
		})
	}
	got := make([]mailbox, len(tests))
	took := make([]time.Duration, len(tests))
	eventually(t, "both first syncs end", func() bool {
		for i := range tests {
			if took[i] == 0 {
				if m := e.getMailbox(tok, created[i].ID); m.Status != "pending" {
					got[i], took[i] = m, time.Since(start)
				}
			}
		}
		return !slices.Contains(took, 0)
	})
	for i, tt := range tests {
		t.Logf("%s: error shown %s after POST /mailboxes", tt.name, took[i].Round(time.Millisecond))
		// The greeting timeout, then the queue's pickup and a margin for a
		// loaded machine.
		if took[i] > 15*time.Second {
			t.Errorf("%s: the error took %s", tt.name, took[i])
		}
		want := created[i]
		want.Status = "error"
		want.LastError = ptr(fmt.Sprintf(tt.want, net.JoinHostPort(tt.srv.Host, strconv.Itoa(tt.srv.Port))))
		if diff := cmp.Diff(want, got[i], cmpopts.IgnoreFields(mailbox{}, "LastSyncedAt")); diff != "" {
			t.Errorf("%s: GET /mailboxes/{id} (-want +got):\n%s", tt.name, diff)
		}
		if got[i].LastSyncedAt == nil {
			t.Errorf("%s: last_synced_at not set", tt.name)
		}
	}
	if got := ids(e.linked(tok, "/contacts/1/linked-emails")); len(got) != 0 {
		t.Errorf("messages stored by failed syncs: %v", got)
	}
}
