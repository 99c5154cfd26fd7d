package mail

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/contactsapi/contactsapitest"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi/leadsapitest"
	"github.com/opencrm/crm/pkg/contract/mailapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/list"
)

// memStore keeps messages in memory for the service's rules; the methods
// a test does not use are the nil Store's (they panic if called).
type memStore struct {
	Store
	messages map[int64]Message
	// aliases are the contacts' addresses from merges.
	aliases map[int64][]string
	// linked records the addresses Linked was asked for, comma-joined.
	linked []string
}

func (m *memStore) Aliases(_ context.Context, contactID int64) ([]string, error) {
	return m.aliases[contactID], nil
}

func (m *memStore) Message(_ context.Context, id int64) (Message, error) {
	msg, ok := m.messages[id]
	if !ok {
		return Message{}, fault.NotFound("email")
	}
	return msg, nil
}

func (m *memStore) Linked(_ context.Context, addresses []string, _ list.Query) ([]Summary, int, error) {
	m.linked = append(m.linked, strings.Join(addresses, ","))
	return []Summary{{ID: 1}}, 1, nil
}

func TestCanRead(t *testing.T) {
	t.Parallel()
	ann, lost := int64(1), int64(0)
	posted := Message{}
	private := Message{OwnerID: &ann}
	orphan := Message{OwnerID: &lost}
	tests := []struct {
		name   string
		caller Caller
		m      Message
		want   bool
	}{
		{"a posted message, by any user", Caller{UserID: 2}, posted, true},
		{"a private message, by its mailbox's owner", Caller{UserID: 1}, private, true},
		{"a private message, by another user", Caller{UserID: 2}, private, false},
		{"a private message, by an admin", Caller{UserID: 9, Admin: true}, private, true},
		{"a message whose owner is lost, by a caller without a user id", Caller{}, orphan, false},
		{"a message whose owner is lost, by an admin", Caller{Admin: true}, orphan, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.caller.CanRead(tt.m); got != tt.want {
				t.Errorf("CanRead = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLinkedTo(t *testing.T) {
	t.Parallel()
	m := Summary{From: "Ann@Example.com", To: []string{"bob@example.org"}, Cc: []string{"carol@example.net"}}
	tests := []struct {
		address string
		want    bool
	}{
		{"ann@example.com", true},
		{" BOB@example.org ", true},
		{"carol@example.net", true},
		{"dave@example.net", false},
		{"", false},
		{"  ", false},
	}
	for _, tt := range tests {
		if got := LinkedTo(m, tt.address); got != tt.want {
			t.Errorf("LinkedTo(%q) = %v, want %v", tt.address, got, tt.want)
		}
	}
}

func TestNormalizeMessageID(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"a@b", "<a@b>"},
		{"<a@b>", "<a@b>"},
		{"  < a@b >  ", "<a@b>"},
		{"<>", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := NormalizeMessageID(tt.in); got != tt.want {
			t.Errorf("NormalizeMessageID(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// newTestService is a service over st whose contacts and leads are their
// owners' fakes: contact 10 is carol@example.org, contact 11 has no email,
// lead 20 is dave@example.net.
func newTestService(t *testing.T, st Store) *Service {
	t.Helper()
	contacts := contactsapitest.NewFake(internalSecret)
	_, contactsClient := contacts.Start(t)
	contacts.PutContact(10, map[string]any{"first_name": "Carol", "email": "Carol@Example.org"})
	contacts.PutContact(11, map[string]any{"first_name": "Nobody", "email": nil})
	leads := leadsapitest.NewFake(internalSecret)
	leads.AddLead(20, map[string]any{"first_name": "Dave", "email": "dave@example.net"})
	s, err := NewService(st, contactsClient, leadsapi.New(leads.Start(t).URL, internalSecret), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMessage: by id, a message is read only by whoever may read it
// (CanRead); through a contact or lead, by anyone, if it is linked to the
// record. Every refusal is the not_found of a missing message, except a
// missing record, which is answered first.
func TestMessage(t *testing.T) {
	t.Parallel()
	ann := int64(1)
	st := &memStore{messages: map[int64]Message{
		1: {Email: mailapi.Email{EmailSummary: Summary{ID: 1, From: "carol@example.org", To: []string{"user1@example.com"}}}, OwnerID: &ann},
		2: {Email: mailapi.Email{EmailSummary: Summary{ID: 2, From: "bob@example.com", To: []string{"x@example.com"}}}},
	}}
	s := newTestService(t, st)
	bob := Caller{UserID: 2}
	tests := []struct {
		name   string
		caller Caller
		id     int64
		via    *RecordRef
		want   string // the error's detail; "" for the message
	}{
		{name: "a posted message by id", caller: bob, id: 2},
		{name: "a private message by id, by its owner", caller: Caller{UserID: 1}, id: 1},
		{name: "a private message by id, by another user", caller: bob, id: 1, want: "email not found"},
		{name: "a missing message", caller: bob, id: 3, want: "email not found"},
		{name: "a private message through its linked contact", caller: bob, id: 1, via: &RecordRef{KindContact, 10}},
		{name: "a message through a contact it is not linked to", caller: bob, id: 2, via: &RecordRef{KindContact, 10}, want: "email not found"},
		{name: "through a contact without an email", caller: bob, id: 1, via: &RecordRef{KindContact, 11}, want: "email not found"},
		{name: "through a lead it is not linked to", caller: bob, id: 1, via: &RecordRef{KindLead, 20}, want: "email not found"},
		{name: "through an unknown contact, the record is answered first", caller: bob, id: 3, via: &RecordRef{KindContact, 404}, want: "contact not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := s.Message(context.Background(), tt.caller, tt.id, tt.via)
			if tt.want == "" {
				if err != nil || m.ID != tt.id {
					t.Fatalf("Message = %d, %v; want message %d", m.ID, err, tt.id)
				}
				return
			}
			var f *fault.Error
			if !errors.As(err, &f) || f.Kind != fault.KindNotFound || f.Detail != tt.want {
				t.Errorf("error = %v, want not_found %q", err, tt.want)
			}
		})
	}
}

// TestLinked: linked emails are looked up by the record's email as the
// participants index holds it (trimmed, lower case); a record without an
// email has none, and the store is not asked.
func TestLinked(t *testing.T) {
	t.Parallel()
	// Contact 10 was merged with a contact of old@example.org; contact 11,
	// without an email, with one of was@example.org.
	st := &memStore{aliases: map[int64][]string{10: {"old@example.org"}, 11: {"was@example.org"}}}
	s := newTestService(t, st)
	page := list.First(25, "sent_at")
	for _, tt := range []struct {
		record    RecordRef
		wantTotal int
	}{
		{RecordRef{KindContact, 10}, 1},
		{RecordRef{KindContact, 11}, 1},
		{RecordRef{KindLead, 20}, 1},
	} {
		got, total, err := s.Linked(context.Background(), LinkedQuery{Query: page, Record: tt.record})
		if err != nil || total != tt.wantTotal || len(got) != tt.wantTotal {
			t.Errorf("Linked(%v) = %d rows, total %d, %v; want %d", tt.record, len(got), total, err, tt.wantTotal)
		}
	}
	if diff := cmp.Diff([]string{"carol@example.org,old@example.org", "was@example.org", "dave@example.net"}, st.linked); diff != "" {
		t.Errorf("addresses asked of the store (-want +got):\n%s", diff)
	}
}

// TestMailboxesNeedSecretKey: without a sealer and a queue (no
// CRM_SECRET_KEY), every mailbox use case is unavailable, before any input
// is read.
func TestMailboxesNeedSecretKey(t *testing.T) {
	t.Parallel()
	s := newTestService(t, &memStore{})
	ctx, c := context.Background(), Caller{UserID: 1}
	calls := map[string]func() error{
		"create": func() error { _, err := s.CreateMailbox(ctx, c, MailboxInput{}); return err },
		"update": func() error { _, err := s.UpdateMailbox(ctx, c, 1, MailboxInput{}); return err },
		"get":    func() error { _, err := s.Mailbox(ctx, c, 1); return err },
		"list":   func() error { _, err := s.Mailboxes(ctx, c); return err },
		"delete": func() error { return s.DeleteMailbox(ctx, c, 1) },
		"sync":   func() error { _, err := s.SyncNow(ctx, c, 1); return err },
	}
	want := fault.Unavailablef(0, "mailbox sync is not configured on this server (CRM_SECRET_KEY)")
	for name, call := range calls {
		var got *fault.Error
		if err := call(); !errors.As(err, &got) || got.Kind != want.Kind || got.Code != want.Code || got.Detail != want.Detail {
			t.Errorf("%s: error = %v, want %v", name, err, want)
		}
	}
}
