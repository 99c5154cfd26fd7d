package store_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/services/mail/imaptest"
	"github.com/opencrm/crm/services/mail/internal/imapsync"
	"github.com/opencrm/crm/services/mail/internal/mail"
)

// TestErasedMessageStaysErasedAcrossResync: a real IMAP sync stores the
// person's messages; an erasure deletes the one that was theirs alone and
// redacts the other; when the sync reads the folder anew (its position
// reset, as a changed UIDVALIDITY or mailbox settings do), the erased
// message is not stored again and the redacted one stays redacted. The
// tombstone is what keeps it out: the store without it brings it back.
func TestErasedMessageStaysErasedAcrossResync(t *testing.T) {
	t.Parallel()
	st, d := privacyStore(t)
	ctx := context.Background()
	const owner, password = "owner@crm.example", "correct horse battery"
	srv := imaptest.Start(t, owner, password)
	srv.Append(t, "INBOX", []byte("Message-ID: <alone@x>\r\nFrom: Ann <ann@example.com>\r\nTo: owner@crm.example\r\n"+
		"Subject: Mine\r\nDate: Sun, 01 Mar 2026 10:00:00 +0000\r\n\r\nOnly between us.\r\n"))
	srv.Append(t, "INBOX", []byte("Message-ID: <shared@x>\r\nFrom: Ann <ann@example.com>\r\nTo: owner@crm.example, carol@example.org\r\n"+
		"Subject: Ours\r\nDate: Sun, 01 Mar 2026 11:00:00 +0000\r\n\r\nCarol, write to ann@example.com.\r\n"))
	sealer, err := mail.NewSealer("test-secret-key-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := sealer.Seal(password)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := st.CreateMailbox(ctx, 1, mail.MailboxFields{Host: srv.Host, Port: srv.Port, TLS: false,
		Username: owner, Folder: "INBOX", PasswordSealed: sealed})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	syncWith := func(s mail.Store) {
		t.Helper()
		sy, err := imapsync.New(s, sealer, imapsync.Options{}, log)
		if err != nil {
			t.Fatal(err)
		}
		if err := sy.Sync(ctx, mb.ID); err != nil {
			t.Fatal(err)
		}
		got, err := st.Mailbox(ctx, mb.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != mail.StatusOK || got.LastUID != 2 {
			t.Fatalf("sync: status %s, last uid %d, error %v", got.Status, got.LastUID, got.LastError)
		}
	}
	type row struct {
		MessageID, From, Body string
		To                    []string
	}
	stored := func() []row {
		t.Helper()
		var out []row
		rows, err := d.Query(ctx, `SELECT message_id, from_address, body_text, to_addresses FROM messages ORDER BY message_id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.MessageID, &r.From, &r.Body, &r.To); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	reread := func() {
		t.Helper()
		if _, err := d.Exec(ctx, `UPDATE mailboxes SET last_uid = 0 WHERE id = $1`, mb.ID); err != nil {
			t.Fatal(err)
		}
	}

	syncWith(st.ForSync())
	if n := len(stored()); n != 2 {
		t.Fatalf("%d messages synced, want 2", n)
	}
	part := erase(t, st, d, privacyapi.Subject{Email: "ann@example.com", ContactIDs: []int64{4}})
	want := privacyapi.Receipt{Erased: map[string]int64{"emails": 1, "aliases": 0}, Redacted: map[string]int64{"emails": 1}}
	if diff := cmp.Diff(want, part.Receipt); diff != "" {
		t.Errorf("erase (-want +got):\n%s", diff)
	}
	redacted := []row{{MessageID: "<shared@x>", From: privacyapi.Erased, Body: "Carol, write to [erased].",
		To: []string{"owner@crm.example", "carol@example.org"}}}

	reread()
	syncWith(st.ForSync())
	if diff := cmp.Diff(redacted, stored()); diff != "" {
		t.Errorf("after a re-read (-want +got):\n%s", diff)
	}

	reread()
	syncWith(st)
	if got := stored(); len(got) != 2 || got[0].MessageID != "<alone@x>" {
		t.Errorf("without the tombstone check the erased message should come back: %+v", got)
	}
}
