package imapsync_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/mail/imaptest"
	"github.com/opencrm/crm/services/mail/internal/imapsync"
	"github.com/opencrm/crm/services/mail/internal/mail"
	"github.com/opencrm/crm/services/mail/internal/store"
	"github.com/opencrm/crm/services/mail/migrations"
)

const (
	user     = "ann@example.com"
	password = "correct horse battery"
)

func migrate(ctx context.Context, d *db.DB) error { return db.Migrate(ctx, d, "mail", migrations.FS) }

type env struct {
	t      *testing.T
	store  *store.Store
	sealer *mail.Sealer
	syncer *imapsync.Syncer
	imap   *imaptest.Server
}

func newEnv(t *testing.T, opts imapsync.Options) *env {
	t.Helper()
	d := testdb.New(t, "mail", migrate, migrations.FS)
	st, err := store.New(d)
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := mail.NewSealer("test-secret-key-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	sy, err := imapsync.New(st, sealer, opts, log)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, store: st, sealer: sealer, syncer: sy, imap: imaptest.Start(t, user, password)}
}

func (e *env) fixture(name string) []byte {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func (e *env) appendAll(names ...string) {
	e.t.Helper()
	for _, n := range names {
		e.imap.Append(e.t, "INBOX", e.fixture(n))
	}
}

func (e *env) mailbox(pw, folder string) mail.Mailbox {
	e.t.Helper()
	sealed, err := e.sealer.Seal(pw)
	if err != nil {
		e.t.Fatal(err)
	}
	mb, err := e.store.CreateMailbox(context.Background(), 1, mail.MailboxFields{
		Host: e.imap.Host, Port: e.imap.Port, TLS: false, Username: user, Folder: folder, PasswordSealed: sealed,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return mb
}

func (e *env) sync(id int64) mail.Mailbox {
	e.t.Helper()
	if err := e.syncer.Sync(context.Background(), id); err != nil {
		e.t.Fatalf("Sync: %v", err)
	}
	mb, err := e.store.Mailbox(context.Background(), id, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return mb
}

// linked returns the message ids linked to address, newest first.
func (e *env) linked(address string) []string {
	e.t.Helper()
	msgs, total, err := e.store.Linked(context.Background(), []string{address}, list.First(100, "sent_at"))
	if err != nil {
		e.t.Fatal(err)
	}
	if total != len(msgs) {
		e.t.Errorf("total = %d, rows = %d", total, len(msgs))
	}
	ids := []string{}
	for _, m := range msgs {
		ids = append(ids, m.MessageID)
	}
	return ids
}

type state struct {
	Status      string
	LastError   string
	UIDValidity uint32
	LastUID     uint32
	Synced      bool
}

func stateOf(mb mail.Mailbox) state {
	s := state{Status: mb.Status, UIDValidity: mb.UIDValidity, LastUID: mb.LastUID, Synced: mb.LastSyncedAt != nil}
	if mb.LastError != nil {
		s.LastError = *mb.LastError
	}
	return s
}

func TestSyncStoresParsedMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, imapsync.Options{})
	e.appendAll("plain.eml", "alternative.eml", "latin1.eml", "broken.eml", "html-noid.eml")
	mb := e.mailbox(password, "INBOX")

	got := e.sync(mb.ID)

	if diff := cmp.Diff(state{Status: "ok", UIDValidity: 1, LastUID: 5, Synced: true}, stateOf(got)); diff != "" {
		t.Errorf("mailbox state (-want +got):\n%s", diff)
	}
	noID := "@no-message-id.invalid>"
	want := []string{"", "<broken-1@example.com>", "<latin1-1@example.fr>", "<alt-1@example.org>", "<plain-1@example.com>"}
	ids := e.linked(user)
	if len(ids) == 5 && strings.HasSuffix(ids[0], noID) {
		want[0] = ids[0]
	}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("messages linked to the mailbox owner, newest first (-want +got):\n%s", diff)
	}
	// Every participant role links, case-insensitively.
	if diff := cmp.Diff([]string{"<plain-1@example.com>"}, e.linked("carol@example.org")); diff != "" {
		t.Errorf("linked to a To address (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"<plain-1@example.com>"}, e.linked("dave@example.net")); diff != "" {
		t.Errorf("linked to a Cc address (-want +got):\n%s", diff)
	}

	msgs, _, err := e.store.Linked(context.Background(), []string{user}, list.First(100, "sent_at"))
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ ID, Subject, Snippet, Direction string }
	var rows []row
	for _, m := range msgs {
		if m.MailboxID == nil || *m.MailboxID != mb.ID {
			t.Errorf("message %s: mailbox_id = %v, want %d", m.MessageID, m.MailboxID, mb.ID)
		}
		id := m.MessageID
		if strings.HasSuffix(id, noID) {
			id = "no-id"
		}
		rows = append(rows, row{id, m.Subject, m.Snippet, m.Direction})
	}
	wantRows := []row{
		{"no-id", "HTML only, no id", "Hi & welcome Second line", "outbound"},
		{"<broken-1@example.com>", "Broken", "Readable part.", "inbound"},
		{"<latin1-1@example.fr>", "Résumé", "Café à Paris, déjà vu.", "inbound"},
		{"<alt-1@example.org>", "Grüße", "Grüße aus Köln, this line is soft wrapped.", "inbound"},
		{"<plain-1@example.com>", "Plain hello", "Hello Bob, this is plain.", "outbound"},
	}
	if diff := cmp.Diff(wantRows, rows); diff != "" {
		t.Errorf("stored messages (-want +got):\n%s", diff)
	}
	full, err := e.store.Message(context.Background(), msgs[4].ID)
	if err != nil {
		t.Fatal(err)
	}
	if full.BodyText != "Hello Bob,\n\nthis is   plain." {
		t.Errorf("body_text = %q", full.BodyText)
	}
}

func TestSyncIsIncremental(t *testing.T) {
	t.Parallel()
	e := newEnv(t, imapsync.Options{Batch: 2})
	e.appendAll("plain.eml", "alternative.eml", "latin1.eml")
	mb := e.mailbox(password, "INBOX")
	if got := stateOf(e.sync(mb.ID)); got.LastUID != 3 || got.Status != "ok" {
		t.Fatalf("first sync: %+v", got)
	}
	// A message posted through the API first is not stored twice.
	if _, created, err := e.store.CreateMessage(context.Background(), mail.NewMessage{
		MessageID: "<broken-1@example.com>", From: "eve@example.com", To: []string{user},
		SentAt: time.Date(2026, 3, 5, 10, 0, 0, 0, time.UTC), Direction: mail.Inbound,
	}); err != nil || !created {
		t.Fatalf("CreateMessage: created=%v err=%v", created, err)
	}
	e.appendAll("broken.eml")

	got := e.sync(mb.ID)

	if diff := cmp.Diff(state{Status: "ok", UIDValidity: 1, LastUID: 4, Synced: true}, stateOf(got)); diff != "" {
		t.Errorf("mailbox state (-want +got):\n%s", diff)
	}
	want := []string{"<broken-1@example.com>", "<latin1-1@example.fr>", "<alt-1@example.org>", "<plain-1@example.com>"}
	if diff := cmp.Diff(want, e.linked(user)); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	// Nothing new: nothing fetched, position kept.
	if got := stateOf(e.sync(mb.ID)); got.LastUID != 4 || got.Status != "ok" {
		t.Errorf("idle sync: %+v", got)
	}
}

func TestSyncUIDValidityChangeResyncs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, imapsync.Options{})
	e.appendAll("plain.eml", "alternative.eml", "latin1.eml")
	mb := e.mailbox(password, "INBOX")
	first := stateOf(e.sync(mb.ID))
	if first.LastUID != 3 {
		t.Fatalf("first sync: %+v", first)
	}
	// The server rebuilds the folder: new UIDVALIDITY, UIDs from 1 again,
	// one old message and one new one.
	e.imap.Recreate(t, "INBOX")
	e.appendAll("latin1.eml", "broken.eml")

	got := stateOf(e.sync(mb.ID))

	want := state{Status: "ok", UIDValidity: first.UIDValidity + 1, LastUID: 2, Synced: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mailbox state (-want +got):\n%s", diff)
	}
	wantIDs := []string{"<broken-1@example.com>", "<latin1-1@example.fr>", "<alt-1@example.org>", "<plain-1@example.com>"}
	if diff := cmp.Diff(wantIDs, e.linked(user)); diff != "" {
		t.Errorf("messages after resync, deduplicated (-want +got):\n%s", diff)
	}
}

func TestSyncWrongPasswordThenFixed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, imapsync.Options{})
	e.appendAll("plain.eml")
	mb := e.mailbox("wrong-password-123", "INBOX")

	got := stateOf(e.sync(mb.ID))

	want := state{Status: "error", LastError: "login failed: the server rejected the username or password", Synced: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mailbox state (-want +got):\n%s", diff)
	}
	for _, secret := range []string{"wrong-password-123", password, user} {
		if strings.Contains(got.LastError, secret) {
			t.Errorf("last_error %q contains a credential", got.LastError)
		}
	}

	sealed, err := e.sealer.Seal(password)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.UpdateMailbox(context.Background(), mb.ID, 1, set(mail.MailboxFields{
		Host: mb.Host, Port: mb.Port, Username: mb.Username, Folder: mb.Folder, PasswordSealed: sealed,
	})); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(state{Status: "ok", UIDValidity: 1, LastUID: 1, Synced: true}, stateOf(e.sync(mb.ID))); diff != "" {
		t.Errorf("after fixing the password (-want +got):\n%s", diff)
	}
}

func TestSyncServerDownThenBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, imapsync.Options{})
	e.appendAll("plain.eml", "alternative.eml")
	mb := e.mailbox(password, "INBOX")
	e.imap.Stop()

	got := stateOf(e.sync(mb.ID))

	addr := net.JoinHostPort(e.imap.Host, strconv.Itoa(e.imap.Port))
	want := state{Status: "error", LastError: "the connection to " + addr + " was refused", Synced: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mailbox state while down (-want +got):\n%s", diff)
	}

	e.imap.Restart(t)
	if diff := cmp.Diff(state{Status: "ok", UIDValidity: 1, LastUID: 2, Synced: true}, stateOf(e.sync(mb.ID))); diff != "" {
		t.Errorf("after the server is back (-want +got):\n%s", diff)
	}
}

func TestSyncFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		opts   imapsync.Options
		mutate func(e *env, f *mail.MailboxFields)
		want   string
	}{
		{
			name:   "missing folder",
			mutate: func(_ *env, f *mail.MailboxFields) { f.Folder = "Nope" },
			want:   `folder "Nope" cannot be opened`,
		},
		{
			name:   "unresolvable host",
			mutate: func(_ *env, f *mail.MailboxFields) { f.Host = "imap.does-not-exist.invalid" },
			want:   "the host of imap.does-not-exist.invalid:143 could not be resolved",
		},
		{
			name: "private address refused",
			opts: imapsync.Options{BlockPrivate: true},
			mutate: func(e *env, f *mail.MailboxFields) {
				f.Port = e.imap.Port
			},
			want: "is not allowed (private address)",
		},
		{
			name: "undecryptable password",
			mutate: func(_ *env, f *mail.MailboxFields) {
				other, _ := mail.NewSealer("some-other-secret-key-000")
				f.PasswordSealed, _ = other.Seal(password)
			},
			want: mail.ErrUnseal.Error(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tt.opts)
			e.appendAll("plain.eml")
			sealed, _ := e.sealer.Seal(password)
			f := mail.MailboxFields{Host: e.imap.Host, Port: e.imap.Port, Username: user, Folder: "INBOX", PasswordSealed: sealed}
			if tt.name == "unresolvable host" {
				f.Port = 143
			}
			tt.mutate(e, &f)
			mb, err := e.store.CreateMailbox(context.Background(), 1, f)
			if err != nil {
				t.Fatal(err)
			}
			got := stateOf(e.sync(mb.ID))
			if got.Status != "error" || !strings.Contains(got.LastError, tt.want) {
				t.Errorf("state = %+v, want status error with %q", got, tt.want)
			}
			if strings.Contains(got.LastError, password) {
				t.Errorf("last_error %q contains the password", got.LastError)
			}
		})
	}
}

func TestSyncLeaseExcludesConcurrentRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, imapsync.Options{})
	mb := e.mailbox(password, "INBOX")
	ctx := context.Background()
	_, token, ok, err := e.store.AcquireSync(ctx, mb.ID, time.Minute)
	if err != nil || !ok {
		t.Fatalf("AcquireSync: ok=%v err=%v", ok, err)
	}
	// A second run finds the lease taken and leaves the mailbox alone.
	if got := stateOf(e.sync(mb.ID)); got.Status != "pending" || got.Synced {
		t.Errorf("state under a held lease = %+v, want untouched", got)
	}
	if err := e.store.FinishSync(ctx, mb.ID, token, mail.SyncOutcome{UIDValidity: 1, LastUID: 0}); err != nil {
		t.Fatal(err)
	}
	if got := stateOf(e.sync(mb.ID)); got.Status != "ok" {
		t.Errorf("state after release = %+v, want ok", got)
	}
	// A sync of a deleted mailbox is a no-op, not an error.
	if err := e.store.DeleteMailbox(ctx, mb.ID, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.syncer.Sync(ctx, mb.ID); err != nil {
		t.Errorf("Sync of a deleted mailbox: %v", err)
	}
}

func TestSettingsChangeDropsStaleSync(t *testing.T) {
	t.Parallel()
	e := newEnv(t, imapsync.Options{})
	mb := e.mailbox(password, "INBOX")
	ctx := context.Background()
	_, token, ok, err := e.store.AcquireSync(ctx, mb.ID, time.Minute)
	if err != nil || !ok {
		t.Fatalf("AcquireSync: ok=%v err=%v", ok, err)
	}
	if _, err := e.store.UpdateMailbox(ctx, mb.ID, 0, set(mail.MailboxFields{
		Host: mb.Host, Port: mb.Port, Username: mb.Username, Folder: "Archive",
	})); err != nil {
		t.Fatal(err)
	}
	// The old run's outcome belongs to the old folder: it is dropped.
	if err := e.store.FinishSync(ctx, mb.ID, token, mail.SyncOutcome{UIDValidity: 9, LastUID: 99}); err != nil {
		t.Fatal(err)
	}
	got, err := e.store.Mailbox(ctx, mb.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(state{Status: "pending"}, stateOf(got)); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	if _, _, ok, _ := e.store.AcquireSync(ctx, mb.ID, time.Minute); !ok {
		t.Error("lease still held after the settings changed")
	}
	if !slices.Equal(e.linked(user), []string{}) {
		t.Error("unexpected messages")
	}
}

// set is an UpdateMailbox change that stores f whatever the current settings.
func set(f mail.MailboxFields) func(mail.Mailbox) (mail.MailboxFields, error) {
	return func(mail.Mailbox) (mail.MailboxFields, error) { return f, nil }
}

// TestSyncUnstorableDate: a Date header that is year 10000 in UTC (which
// neither PostgreSQL nor RFC 3339 holds) falls back to the server's date,
// like a missing one, and the message is stored.
func TestSyncUnstorableDate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, imapsync.Options{})
	e.appendAll("far-future.eml")
	mb := e.mailbox(password, "INBOX")
	if got := e.sync(mb.ID); got.Status != "ok" {
		t.Fatalf("mailbox %+v", stateOf(got))
	}
	msgs, _, err := e.store.Linked(context.Background(), []string{"zed@example.com"}, list.First(10, "sent_at"))
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].MessageID != "<future-1@example.com>" || msgs[0].SentAt.Year() > 9999 {
		t.Fatalf("stored %+v", msgs)
	}
}

// TestSyncDateNamedZone: a Date header in a named zone is stored at its
// UTC instant (10:00 EST is 15:00Z), and one in "Z", which was refused
// and replaced by the server's date (2026-01-01 in imaptest), is read.
func TestSyncDateNamedZone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, imapsync.Options{})
	for _, m := range []struct{ id, date string }{
		{"est", "Mon, 2 Mar 2026 10:00:00 EST"},
		{"pdt", "2 Mar 26 10:00 PDT (Pacific Daylight Time)"},
		{"z", "Mon, 2 Mar 2026 10:00:00 Z"},
	} {
		e.imap.Append(t, "INBOX", []byte("From: zoe@example.com\r\nTo: "+user+"\r\nSubject: "+m.id+
			"\r\nMessage-ID: <"+m.id+"@example.com>\r\nDate: "+m.date+"\r\n\r\nHello.\r\n"))
	}
	mb := e.mailbox(password, "INBOX")
	if got := e.sync(mb.ID); got.Status != "ok" {
		t.Fatalf("mailbox %+v", stateOf(got))
	}
	msgs, _, err := e.store.Linked(context.Background(), []string{"zoe@example.com"}, list.First(10, "sent_at"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range msgs {
		got[m.MessageID] = m.SentAt.String()
	}
	want := map[string]string{
		"<est@example.com>": "2026-03-02T15:00:00.000000Z",
		"<pdt@example.com>": "2026-03-02T17:00:00.000000Z",
		"<z@example.com>":   "2026-03-02T10:00:00.000000Z",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stored sent_at (-want +got):\n%s", diff)
	}
}

// TestSyncWrongTLSSetting: a mailbox whose tls setting does not match its
// port fails quickly with a message naming the likely mistake, and changes
// nothing but its status. Without TLS on an implicit-TLS port the server
// waits for a handshake and sends no greeting; the sync used to wait for
// go-imap's 30 s read timeout and then blame the server.
func TestSyncWrongTLSSetting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		serverTLS  bool
		mailboxTLS bool
		want       string // %s is the server's address
	}{
		{"tls off on an implicit-TLS port", true, false, "no IMAP greeting from %s within 1.5s: is the port expecting TLS (tls: true)?"},
		{"tls on a plain port", false, true, "the server at %s answered without TLS: is the port expecting plain IMAP (tls: false)?"},
		{"tls on an implicit-TLS port", true, true, ""},
		{"tls off on a plain port", false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, imapsync.Options{GreetingTimeout: 1500 * time.Millisecond})
			srv := e.imap
			if tt.serverTLS {
				srv = imaptest.StartTLS(t, user, password)
				var err error
				if e.syncer, err = imapsync.New(e.store, e.sealer, imapsync.Options{
					GreetingTimeout: 1500 * time.Millisecond, TLSConfig: &tls.Config{RootCAs: srv.RootCAs},
				}, slog.New(slog.NewJSONHandler(io.Discard, nil))); err != nil {
					t.Fatal(err)
				}
			}
			srv.Append(t, "INBOX", e.fixture("plain.eml"))
			sealed, err := e.sealer.Seal(password)
			if err != nil {
				t.Fatal(err)
			}
			mb, err := e.store.CreateMailbox(context.Background(), 1, mail.MailboxFields{
				Host: srv.Host, Port: srv.Port, TLS: tt.mailboxTLS, Username: user, Folder: "INBOX", PasswordSealed: sealed,
			})
			if err != nil {
				t.Fatal(err)
			}

			start := time.Now()
			got := stateOf(e.sync(mb.ID))
			elapsed := time.Since(start)

			want := state{Status: "ok", UIDValidity: 1, LastUID: 1, Synced: true}
			if tt.want != "" {
				addr := net.JoinHostPort(srv.Host, strconv.Itoa(srv.Port))
				want = state{Status: "error", LastError: fmt.Sprintf(tt.want, addr), Synced: true}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("mailbox state (-want +got):\n%s", diff)
			}
			// The greeting timeout plus a generous margin for a loaded
			// machine; the old wait was 30 s.
			if elapsed > 10*time.Second {
				t.Errorf("sync took %s", elapsed)
			}
			if n := len(e.linked(user)); tt.want != "" && n != 0 {
				t.Errorf("%d messages stored by a failed sync", n)
			}
		})
	}
}

// TestSyncEmptyMessageID: messages whose Message-ID is empty once its
// brackets are removed ("<>", "< >") are each stored under an id made from
// their content. They were all stored under "", so every one after the
// first was taken for a duplicate and lost (found by FuzzParse).
func TestSyncEmptyMessageID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, imapsync.Options{})
	for _, id := range []string{"<>", "< >", "<\x00>"} {
		e.imap.Append(t, "INBOX", []byte("From: yan@example.com\r\nTo: "+user+"\r\nSubject: id "+id+
			"\r\nMessage-ID: "+id+"\r\nDate: Mon, 2 Mar 2026 10:00:00 +0000\r\n\r\nHello.\r\n"))
	}
	mb := e.mailbox(password, "INBOX")
	if got := e.sync(mb.ID); got.Status != "ok" {
		t.Fatalf("mailbox %+v", stateOf(got))
	}
	msgs, _, err := e.store.Linked(context.Background(), []string{"yan@example.com"}, list.First(10, "sent_at"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range msgs {
		if !strings.HasSuffix(m.MessageID, "@no-message-id.invalid>") || seen[m.MessageID] {
			t.Errorf("message_id %q: want a distinct content id", m.MessageID)
		}
		seen[m.MessageID] = true
	}
	if len(msgs) != 3 {
		t.Errorf("%d messages stored, want 3", len(msgs))
	}
}
