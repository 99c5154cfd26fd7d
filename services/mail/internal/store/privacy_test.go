package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/mail/internal/mail"
	"github.com/opencrm/crm/services/mail/internal/store"
)

// privacyStore is a store on the schema the service migrates (with the
// idempotency keys an erasure's part is stored in).
func privacyStore(t *testing.T) (*store.Store, *db.DB) {
	t.Helper()
	d := testdb.New(t, "mail", store.Migrate, store.MigrationSets...)
	st, err := store.New(d)
	if err != nil {
		t.Fatal(err)
	}
	return st, d
}

var sent = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// message stores a message as the API or the sync does and returns it.
func message(t *testing.T, st *store.Store, n mail.NewMessage) mail.Message {
	t.Helper()
	if n.SentAt.IsZero() {
		n.SentAt = sent
	}
	if n.Direction == "" {
		n.Direction = mail.Inbound
	}
	m, created, err := st.CreateMessage(context.Background(), n)
	if err != nil || !created {
		t.Fatalf("store %s: created=%v err=%v", n.MessageID, created, err)
	}
	return m
}

type participant struct{ Address, Role string }

func participants(t *testing.T, d *db.DB, id int64) []participant {
	t.Helper()
	rows, err := d.Query(context.Background(), `SELECT address, role FROM participants WHERE message_id = $1 ORDER BY role, address COLLATE "C"`, id)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := pgx.CollectRows(rows, pgx.RowToStructByPos[participant])
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func exportOf(t *testing.T, st *store.Store, s privacyapi.Subject) store.PrivacyExport {
	t.Helper()
	part, err := st.Export(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(privacyapi.Found{}, part.Found); diff != "" {
		t.Errorf("found (-want +got):\n%s", diff)
	}
	var out store.PrivacyExport
	if err := json.Unmarshal(part.Data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPrivacyExport: the person's messages are those with their address
// among the participants, whatever its case; a longer address holding
// theirs is someone else. Each is exported whole, with the person's
// contacts and leads it is linked to.
func TestPrivacyExport(t *testing.T) {
	t.Parallel()
	st, _ := privacyStore(t)
	from := message(t, st, mail.NewMessage{MessageID: "<a@x>", From: "ANN@Example.com", To: []string{"owner@crm.example"},
		Subject: "Hello", BodyText: "Hi there", SentAt: sent.Add(time.Hour)})
	cc := message(t, st, mail.NewMessage{MessageID: "<b@x>", From: "carol@example.org", To: []string{"bob@example.org"},
		Cc: []string{"ann@example.com"}, Subject: "Fwd", BodyText: "See below", Direction: mail.Outbound})
	message(t, st, mail.NewMessage{MessageID: "<c@x>", From: "joann@example.com", To: []string{"ann@example.com.au"}})

	got := exportOf(t, st, privacyapi.Subject{Email: " Ann@example.COM ", ContactIDs: []int64{9, 3}, LeadIDs: []int64{4}})
	want := store.PrivacyExport{Emails: []store.PrivacyEmail{
		{ID: cc.ID, MessageID: "<b@x>", Subject: "Fwd", From: "carol@example.org", To: []string{"bob@example.org"},
			Cc: []string{"ann@example.com"}, SentAt: cc.SentAt, Direction: mail.Outbound, BodyText: "See below",
			ContactIDs: []int64{3, 9}, LeadIDs: []int64{4}},
		{ID: from.ID, MessageID: "<a@x>", Subject: "Hello", From: "ANN@Example.com", To: []string{"owner@crm.example"},
			Cc: []string{}, SentAt: from.SentAt, Direction: mail.Inbound, BodyText: "Hi there",
			ContactIDs: []int64{3, 9}, LeadIDs: []int64{4}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("export (-want +got):\n%s", diff)
	}

	none := exportOf(t, st, privacyapi.Subject{Email: "nobody@example.com"})
	if diff := cmp.Diff(store.PrivacyExport{Emails: []store.PrivacyEmail{}}, none); diff != "" {
		t.Errorf("export of nobody (-want +got):\n%s", diff)
	}
}

func erase(t *testing.T, st *store.Store, d *db.DB, s privacyapi.Subject) privacyapi.ErasePart {
	t.Helper()
	var part privacyapi.ErasePart
	err := d.InTx(context.Background(), func(tx pgx.Tx) error {
		var err error
		part, err = st.Erase(context.Background(), tx, s)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return part
}

// TestPrivacyErase: a message between the person and the CRM's mailboxes
// (or persons erased before) is deleted and tombstoned; one someone else
// took part in keeps everything but the person's address, in its
// addresses, participants, subject and body (a longer address holding
// theirs stays). Other messages are untouched, and a second erasure finds
// nothing left.
func TestPrivacyErase(t *testing.T) {
	t.Parallel()
	st, d := privacyStore(t)
	ctx := context.Background()
	owner, err := st.CreateMailbox(ctx, 1, mail.MailboxFields{Host: "imap.example.com", Port: 993, TLS: true,
		Username: "Owner@CRM.example", Folder: "INBOX", PasswordSealed: []byte("sealed")})
	if err != nil {
		t.Fatal(err)
	}
	box := owner.ID
	alone := message(t, st, mail.NewMessage{MessageID: "<alone@x>", From: "Ann@Example.com", To: []string{"owner@crm.example"},
		BodyText: "Mine only", MailboxID: &box})
	withErased := message(t, st, mail.NewMessage{MessageID: "<with-erased@x>", From: "owner@crm.example",
		To: []string{"ann@example.com", privacyapi.Erased}, Direction: mail.Outbound, MailboxID: &box})
	shared := message(t, st, mail.NewMessage{MessageID: "<shared@x>", From: "carol@example.org",
		To: []string{"Ann@example.com", "owner@crm.example"}, Cc: []string{"joann@example.com"},
		Subject: "re: ann@example.com",
		BodyText: "On Monday ANN@example.com wrote:\n> ask ann@example.com,ann@example.com.\n" +
			"joann@example.com and ann@example.com.au are others.", MailboxID: &box})
	twice := message(t, st, mail.NewMessage{MessageID: "<twice@x>", From: "dave@example.org",
		To: []string{"ann@example.com"}, Cc: []string{"ann@example.com", "eve@example.org"}})
	other := message(t, st, mail.NewMessage{MessageID: "<other@x>", From: "carol@example.org",
		To: []string{"owner@crm.example"}, BodyText: "not about ann", MailboxID: &box})
	otherBefore := participants(t, d, other.ID)

	// Aliases from merges: the person's address on contact 9, an address
	// of their contact 5, and someone else's, which stays.
	if _, err := st.AddAliases(ctx, 9, nil, []string{"ann@example.com", "bob@example.com"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddAliases(ctx, 5, nil, []string{"ann.old@example.com"}); err != nil {
		t.Fatal(err)
	}
	ann := privacyapi.Subject{Email: "ann@EXAMPLE.com", ContactIDs: []int64{5}}
	want := privacyapi.ErasePart{Receipt: privacyapi.Receipt{
		Erased: map[string]int64{"emails": 2, "aliases": 2}, Redacted: map[string]int64{"emails": 2}}}
	if diff := cmp.Diff(want, erase(t, st, d, ann)); diff != "" {
		t.Errorf("erase (-want +got):\n%s", diff)
	}

	if got, err := st.Aliases(ctx, 9); err != nil || len(got) != 1 || got[0] != "bob@example.com" {
		t.Errorf("contact 9's aliases after the erasure: %v, %v; want [bob@example.com]", got, err)
	}
	for _, id := range []int64{alone.ID, withErased.ID} {
		if _, err := st.Message(ctx, id); err == nil {
			t.Errorf("message %d is still stored", id)
		}
	}
	var hashes [][]byte
	rows, _ := d.Query(ctx, `SELECT message_id_hash FROM erased_messages ORDER BY message_id_hash`)
	hashes, err = pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		t.Fatal(err)
	}
	h1, h2 := sha256.Sum256([]byte("<alone@x>")), sha256.Sum256([]byte("<with-erased@x>"))
	wantHashes := [][]byte{h1[:], h2[:]}
	if string(wantHashes[0]) > string(wantHashes[1]) {
		wantHashes[0], wantHashes[1] = wantHashes[1], wantHashes[0]
	}
	if diff := cmp.Diff(wantHashes, hashes); diff != "" {
		t.Errorf("tombstones (-want +got):\n%s", diff)
	}

	body := "On Monday [erased] wrote:\n> ask [erased],[erased].\njoann@example.com and ann@example.com.au are others."
	for _, tt := range []struct {
		name         string
		id           int64
		from         string
		to, cc       []string
		subject      string
		body         string
		participants []participant
	}{
		{"shared", shared.ID, "carol@example.org", []string{"[erased]", "owner@crm.example"}, []string{"joann@example.com"},
			"re: [erased]", body,
			[]participant{{"joann@example.com", "cc"}, {"carol@example.org", "from"}, {"[erased]", "to"}, {"owner@crm.example", "to"}}},
		{"twice", twice.ID, "dave@example.org", []string{"[erased]"}, []string{"[erased]", "eve@example.org"}, "", "",
			[]participant{{"[erased]", "cc"}, {"eve@example.org", "cc"}, {"dave@example.org", "from"}, {"[erased]", "to"}}},
		{"other", other.ID, "carol@example.org", []string{"owner@crm.example"}, []string{}, "", "not about ann", otherBefore},
	} {
		m, err := st.Message(ctx, tt.id)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		type row struct {
			From, Subject, Body, Snippet string
			To, Cc                       []string
		}
		got := row{m.From, m.Subject, m.BodyText, m.Snippet, m.To, m.Cc}
		if diff := cmp.Diff(row{tt.from, tt.subject, tt.body, mail.Snippet(tt.body), tt.to, tt.cc}, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(tt.participants, participants(t, d, tt.id)); diff != "" {
			t.Errorf("%s participants (-want +got):\n%s", tt.name, diff)
		}
	}
	if diff := cmp.Diff(store.PrivacyExport{Emails: []store.PrivacyEmail{}}, exportOf(t, st, ann)); diff != "" {
		t.Errorf("export after the erasure (-want +got):\n%s", diff)
	}

	again := privacyapi.ErasePart{Receipt: privacyapi.Receipt{
		Erased: map[string]int64{"emails": 0, "aliases": 0}, Redacted: map[string]int64{"emails": 0}}}
	if diff := cmp.Diff(again, erase(t, st, d, ann)); diff != "" {
		t.Errorf("second erase (-want +got):\n%s", diff)
	}
}

// TestSyncSkipsErasedMessages: the sync's store does not store a message
// an erasure deleted again, stores new ones, and answers a redacted one
// as it is now.
func TestSyncSkipsErasedMessages(t *testing.T) {
	t.Parallel()
	st, d := privacyStore(t)
	ctx := context.Background()
	mb, err := st.CreateMailbox(ctx, 1, mail.MailboxFields{Host: "imap.example.com", Port: 993, TLS: true,
		Username: "owner@crm.example", Folder: "INBOX", PasswordSealed: []byte("sealed")})
	if err != nil {
		t.Fatal(err)
	}
	box := mb.ID
	synced := func(id string, to ...string) mail.NewMessage {
		return mail.NewMessage{MessageID: id, From: "ann@example.com", To: to, BodyText: "Ann's words",
			SentAt: sent, Direction: mail.Inbound, MailboxID: &box}
	}
	message(t, st, synced("<gone@x>", "owner@crm.example"))
	kept := message(t, st, synced("<kept@x>", "owner@crm.example", "carol@example.org"))
	erase(t, st, d, privacyapi.Subject{Email: "ann@example.com"})

	sync := st.ForSync()
	m, created, err := sync.CreateMessage(ctx, synced("<gone@x>", "owner@crm.example"))
	if err != nil || created || m.ID != 0 {
		t.Errorf("erased message synced again: %+v created=%v err=%v", m, created, err)
	}
	var n int
	if err := d.QueryRow(ctx, `SELECT count(*) FROM messages WHERE message_id = '<gone@x>'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("erased message stored again: %d rows, %v", n, err)
	}
	m, created, err = sync.CreateMessage(ctx, synced("<kept@x>", "owner@crm.example", "carol@example.org"))
	if err != nil || created || m.ID != kept.ID || m.From != privacyapi.Erased {
		t.Errorf("redacted message synced again: %+v created=%v err=%v", m, created, err)
	}
	m, created, err = sync.CreateMessage(ctx, synced("<new@x>", "owner@crm.example"))
	if err != nil || !created || m.ID == 0 {
		t.Errorf("new message not synced: %+v created=%v err=%v", m, created, err)
	}
}
