package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/mail/internal/mail"
	"github.com/opencrm/crm/services/mail/internal/store"
	"github.com/opencrm/crm/services/mail/migrations"
)

func newStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.New(testdb.New(t, "mail", migrate, migrations.FS))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func newMailbox(t *testing.T, st *store.Store, owner int64) mail.Mailbox {
	t.Helper()
	mb, err := st.CreateMailbox(context.Background(), owner, mail.MailboxFields{
		Host: "imap.example.com", Port: 993, TLS: true, Username: "u", Folder: "INBOX", PasswordSealed: []byte("sealed"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return mb
}

// TestCreateMessageOnce: a message_id is stored once; a repeat, from a
// mailbox or posted, answers the stored message and never changes its
// owner, so copying someone's Message-ID grants nothing. Participants are
// indexed in lower case.
func TestCreateMessageOnce(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := context.Background()
	annBox, bobBox := newMailbox(t, st, 1).ID, newMailbox(t, st, 2).ID
	msg := func(box *int64, subject string) mail.NewMessage {
		return mail.NewMessage{MessageID: "<once@example.com>", From: "Carol@Example.org", To: []string{"ann@example.com"},
			Subject: subject, SentAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), Direction: mail.Inbound, MailboxID: box}
	}
	type stored struct {
		Created bool
		Subject string
		Owner   *int64
	}
	ann := int64(1)
	for _, tt := range []struct {
		name string
		in   mail.NewMessage
		want stored
	}{
		{"synced from ann's mailbox", msg(&annBox, "first"), stored{Created: true, Subject: "first", Owner: &ann}},
		{"the same id from bob's mailbox", msg(&bobBox, "second"), stored{Subject: "first", Owner: &ann}},
		{"the same id posted", msg(nil, "third"), stored{Subject: "first", Owner: &ann}},
	} {
		m, created, err := st.CreateMessage(ctx, tt.in)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if diff := cmp.Diff(tt.want, stored{Created: created, Subject: m.Subject, Owner: m.OwnerID}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	linked, total, err := st.Linked(ctx, []string{"carol@example.org"}, list.First(25, "sent_at"))
	if err != nil || total != 1 || len(linked) != 1 || linked[0].MessageID != "<once@example.com>" {
		t.Errorf("Linked = %+v, total %d, %v; want the one message", linked, total, err)
	}
}

// TestMailboxOwner: a mailbox is found, changed and deleted only under its
// owner (or with owner 0, an admin); anyone else gets the not_found of a
// mailbox that does not exist.
func TestMailboxOwner(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := context.Background()
	keep := func(cur mail.Mailbox) (mail.MailboxFields, error) {
		return mail.MailboxFields{Host: cur.Host, Port: cur.Port, TLS: cur.TLS, Username: cur.Username, Folder: cur.Folder}, nil
	}
	tests := []struct {
		name   string
		owner  int64
		wantOK bool
	}{
		{"its owner", 1, true},
		{"another user", 2, false},
		{"an admin", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := newMailbox(t, st, 1).ID
			_, getErr := st.Mailbox(ctx, id, tt.owner)
			_, updateErr := st.UpdateMailbox(ctx, id, tt.owner, keep)
			deleteErr := st.DeleteMailbox(ctx, id, tt.owner)
			for op, err := range map[string]error{"get": getErr, "update": updateErr, "delete": deleteErr} {
				switch {
				case tt.wantOK && err != nil:
					t.Errorf("%s: %v", op, err)
				case !tt.wantOK && !errors.Is(err, fault.NotFound("")):
					t.Errorf("%s: error = %v, want not_found", op, err)
				}
			}
		})
	}
}

// TestUpdateMailboxMoved: a change of host, port, username or folder drops
// the sync position (UIDs of the old folder mean nothing in the new one);
// other changes keep it.
func TestUpdateMailboxMoved(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := context.Background()
	tests := []struct {
		name     string
		change   func(*mail.MailboxFields)
		wantKept bool
	}{
		{"nothing", func(*mail.MailboxFields) {}, true},
		{"tls", func(f *mail.MailboxFields) { f.TLS = false }, true},
		{"host", func(f *mail.MailboxFields) { f.Host = "imap2.example.com" }, false},
		{"port", func(f *mail.MailboxFields) { f.Port = 1993 }, false},
		{"username", func(f *mail.MailboxFields) { f.Username = "v" }, false},
		{"folder", func(f *mail.MailboxFields) { f.Folder = "Archive" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mb := newMailbox(t, st, 1)
			_, token, ok, err := st.AcquireSync(ctx, mb.ID, time.Minute)
			if err != nil || !ok {
				t.Fatalf("AcquireSync: %v, %v", ok, err)
			}
			if err := st.FinishSync(ctx, mb.ID, token, mail.SyncOutcome{UIDValidity: 7, LastUID: 42}); err != nil {
				t.Fatal(err)
			}
			got, err := st.UpdateMailbox(ctx, mb.ID, 1, func(cur mail.Mailbox) (mail.MailboxFields, error) {
				f := mail.MailboxFields{Host: cur.Host, Port: cur.Port, TLS: cur.TLS, Username: cur.Username, Folder: cur.Folder}
				tt.change(&f)
				return f, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			want := [2]uint32{}
			if tt.wantKept {
				want = [2]uint32{7, 42}
			}
			if diff := cmp.Diff(want, [2]uint32{got.UIDValidity, got.LastUID}); diff != "" {
				t.Errorf("uidvalidity and last_uid (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUpdateMailboxRefused: when the change is refused (the domain's
// validation, decided under the row's lock), its error is returned and
// nothing is written.
func TestUpdateMailboxRefused(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	ctx := context.Background()
	mb := newMailbox(t, st, 1)
	refusal := fault.Invalid("password", "is required")
	_, err := st.UpdateMailbox(ctx, mb.ID, 1, func(mail.Mailbox) (mail.MailboxFields, error) {
		return mail.MailboxFields{}, refusal
	})
	if !errors.Is(err, refusal) {
		t.Fatalf("error = %v, want the refusal", err)
	}
	got, err := st.Mailbox(ctx, mb.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mb, got); diff != "" {
		t.Errorf("mailbox after a refused change (-want +got):\n%s", diff)
	}
}
