package mail

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/fault"
)

func TestSnippet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"collapses whitespace", "  Hello,\n\n\tworld  \r\n again ", "Hello, world again"},
		{"drops control characters", "a\x01b", "ab"},
		{"keeps multibyte", "Grüße  aus  Köln", "Grüße aus Köln"},
		{"cuts at the limit", strings.Repeat("ab ", 200), strings.TrimSpace(strings.Repeat("ab ", 67))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Snippet(tt.in)
			if got != tt.want {
				t.Errorf("Snippet(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if n := len([]rune(got)); n > SnippetLen {
				t.Errorf("snippet has %d characters, want at most %d", n, SnippetLen)
			}
		})
	}
}

func TestSnippetLongWord(t *testing.T) {
	t.Parallel()
	got := Snippet(strings.Repeat("é", 500))
	if got != strings.Repeat("é", SnippetLen) {
		t.Errorf("Snippet = %d runes, want %d é", len([]rune(got)), SnippetLen)
	}
}

func fields(err error) []string {
	var p *fault.Error
	if !errors.As(err, &p) {
		return nil
	}
	out := []string{}
	for _, f := range p.Fields {
		out = append(out, f.Field)
	}
	return out
}

func TestMessageInputValidate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		in     MessageInput
		want   NewMessage
		fields []string
	}{
		{
			name: "minimal defaults",
			in:   MessageInput{MessageID: " <abc@x.example> ", From: "Ann <Ann@X.example>"},
			want: NewMessage{MessageID: "<abc@x.example>", From: "Ann@X.example", To: []string{}, Cc: []string{},
				SentAt: now, Direction: Inbound},
		},
		{
			name: "full",
			in: MessageInput{MessageID: "m1", From: "a@x.example", To: []string{"b@y.example", "Bob <c@y.example>"},
				Cc: []string{"d@z.example"}, Subject: " Hi\x00 ", BodyText: "body", SentAt: "2026-02-01T10:00:00+01:00",
				Direction: Outbound},
			want: NewMessage{MessageID: "<m1>", From: "a@x.example", To: []string{"b@y.example", "c@y.example"},
				Cc: []string{"d@z.example"}, Subject: "Hi", BodyText: "body",
				SentAt: time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC), Direction: Outbound},
		},
		{name: "missing message_id and from", in: MessageInput{}, fields: []string{"message_id", "from"}},
		{name: "malformed from", in: MessageInput{MessageID: "m", From: "not an address"}, fields: []string{"from"}},
		{
			name:   "malformed recipients named by index",
			in:     MessageInput{MessageID: "m", From: "a@x.example", To: []string{"b@y.example", "nope"}, Cc: []string{"x@"}},
			fields: []string{"to[1]", "cc[0]"},
		},
		{name: "bad direction", in: MessageInput{MessageID: "m", From: "a@x.example", Direction: "sideways"}, fields: []string{"direction"}},
		{name: "bad sent_at", in: MessageInput{MessageID: "m", From: "a@x.example", SentAt: "yesterday"}, fields: []string{"sent_at"}},
		// Valid RFC 3339, but year 10000 and year -1 in UTC: the API could not write them back.
		{name: "sent_at after year 9999 in UTC", in: MessageInput{MessageID: "m", From: "a@x.example", SentAt: "9999-12-31T23:59:59-23:59"}, fields: []string{"sent_at"}},
		{name: "sent_at before year 1 in UTC", in: MessageInput{MessageID: "m", From: "a@x.example", SentAt: "0000-01-01T00:00:00+23:59"}, fields: []string{"sent_at"}},
		{
			name: "sent_at at PostgreSQL's precision",
			in:   MessageInput{MessageID: "m", From: "a@x.example", SentAt: "9999-12-31T23:59:59.9999999Z"},
			want: NewMessage{MessageID: "<m>", From: "a@x.example", To: []string{}, Cc: []string{},
				SentAt: time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC), Direction: Inbound},
		},
		{name: "long message_id", in: MessageInput{MessageID: strings.Repeat("m", MaxMessageID+1), From: "a@x.example"}, fields: []string{"message_id"}},
		{name: "long subject", in: MessageInput{MessageID: "m", From: "a@x.example", Subject: strings.Repeat("s", MaxSubject+1)}, fields: []string{"subject"}},
		{name: "too many recipients", in: MessageInput{MessageID: "m", From: "a@x.example", To: make([]string, MaxRecipients+1)}, fields: []string{"to"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ValidateMessage(tt.in, now)
			if tt.fields != nil {
				if diff := cmp.Diff(tt.fields, fields(err)); diff != "" {
					t.Errorf("fields (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParticipants(t *testing.T) {
	t.Parallel()
	m := NewMessage{From: "A@x.example", To: []string{"b@y.example", "a@X.example"}, Cc: []string{"B@y.example", "b@y.example"}}
	want := []Participant{
		{"a@x.example", RoleFrom}, {"b@y.example", RoleTo}, {"a@x.example", RoleTo}, {"b@y.example", RoleCc},
	}
	if diff := cmp.Diff(want, m.Participants()); diff != "" {
		t.Errorf("participants (-want +got):\n%s", diff)
	}
}

func ptr[T any](v T) *T { return &v }

func TestMailboxInputValidate(t *testing.T) {
	t.Parallel()
	cur := &Mailbox{Host: "old.example", Port: 1143, TLS: false, Username: "u", Folder: "Archive"}
	tests := []struct {
		name     string
		in       MailboxInput
		cur      *Mailbox
		want     MailboxFields
		password string
		fields   []string
	}{
		{
			name:     "create defaults to TLS on 993 and INBOX",
			in:       MailboxInput{Host: ptr("imap.example.com"), Username: ptr("me@example.com"), Password: ptr("pw")},
			want:     MailboxFields{Host: "imap.example.com", Port: 993, TLS: true, Username: "me@example.com", Folder: "INBOX"},
			password: "pw",
		},
		{
			name:     "create without TLS defaults to 143",
			in:       MailboxInput{Host: ptr("127.0.0.1"), TLS: ptr(false), Username: ptr("me"), Password: ptr("pw"), Folder: ptr("Sent")},
			want:     MailboxFields{Host: "127.0.0.1", Port: 143, TLS: false, Username: "me", Folder: "Sent"},
			password: "pw",
		},
		{name: "create needs host, username, password", in: MailboxInput{}, fields: []string{"host", "username", "password"}},
		{
			name:   "bad host, port and folder",
			in:     MailboxInput{Host: ptr("http://x/"), Port: ptr(70000), Username: ptr("u"), Password: ptr("p"), Folder: ptr("a\r\nb")},
			fields: []string{"host", "port", "folder"},
		},
		{name: "empty password", in: MailboxInput{Host: ptr("h.example"), Username: ptr("u"), Password: ptr("")}, fields: []string{"password"}},
		{
			name: "update keeps port, tls, folder and password",
			in:   MailboxInput{Host: ptr("old.example"), Username: ptr("u")},
			cur:  cur,
			want: MailboxFields{Host: "old.example", Port: 1143, TLS: false, Username: "u", Folder: "Archive"},
		},
		{
			name: "update turning tls on needs no password",
			in:   MailboxInput{Host: ptr("old.example"), Username: ptr("u"), TLS: ptr(true)},
			cur:  cur,
			want: MailboxFields{Host: "old.example", Port: 1143, TLS: true, Username: "u", Folder: "Archive"},
		},
		{name: "update to another host needs the password", in: MailboxInput{Host: ptr("new.example"), Username: ptr("u")}, cur: cur, fields: []string{"password"}},
		{name: "update to another port needs the password", in: MailboxInput{Host: ptr("old.example"), Port: ptr(143), Username: ptr("u")}, cur: cur, fields: []string{"password"}},
		{name: "update to another username needs the password", in: MailboxInput{Host: ptr("old.example"), Username: ptr("u2")}, cur: cur, fields: []string{"password"}},
		{
			name: "update turning tls off needs the password",
			in:   MailboxInput{Host: ptr("old.example"), Username: ptr("u"), TLS: ptr(false)},
			cur:  &Mailbox{Host: "old.example", Port: 1143, TLS: true, Username: "u", Folder: "Archive"}, fields: []string{"password"},
		},
		{
			name:     "update to another host with the password",
			in:       MailboxInput{Host: ptr("new.example"), Username: ptr("u2"), Password: ptr("new")},
			cur:      cur,
			want:     MailboxFields{Host: "new.example", Port: 1143, TLS: false, Username: "u2", Folder: "Archive"},
			password: "new",
		},
		{
			name:     "update with empty folder resets to INBOX",
			in:       MailboxInput{Host: ptr("old.example"), Username: ptr("u"), Folder: ptr(""), Password: ptr("new")},
			cur:      cur,
			want:     MailboxFields{Host: "old.example", Port: 1143, TLS: false, Username: "u", Folder: "INBOX"},
			password: "new",
		},
		{name: "update still needs host and username", in: MailboxInput{}, cur: cur, fields: []string{"host", "username"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := validateMailbox(tt.in, tt.cur)
			if tt.fields != nil {
				if diff := cmp.Diff(tt.fields, fields(err)); diff != "" {
					t.Errorf("fields (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("validate: %v", err)
			}
			if diff := cmp.Diff(tt.want, got.fields); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
			if got.password != tt.password {
				t.Errorf("password = %q, want %q", got.password, tt.password)
			}
		})
	}
}

func TestSealer(t *testing.T) {
	t.Parallel()
	s, err := NewSealer("0123456789abcdef-secret")
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := s.Seal("hunter2")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), "hunter2") {
		t.Fatal("sealed value contains the plaintext")
	}
	again, _ := s.Seal("hunter2")
	if string(again) == string(sealed) {
		t.Error("two seals of one password are equal; the nonce is not random")
	}
	got, err := s.Open(sealed)
	if err != nil || got != "hunter2" {
		t.Fatalf("Open = %q, %v; want hunter2", got, err)
	}
	other, _ := NewSealer("another-secret-key-0000")
	if _, err := other.Open(sealed); !errors.Is(err, ErrUnseal) {
		t.Errorf("Open with another key: err = %v, want ErrUnseal", err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := s.Open(sealed); !errors.Is(err, ErrUnseal) {
		t.Errorf("Open of a tampered value: err = %v, want ErrUnseal", err)
	}
	if _, err := NewSealer("short"); err == nil {
		t.Error("NewSealer accepted a short secret")
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	if got := Truncate("aé", 2); got != "a" {
		t.Errorf("Truncate split a rune: %q", got)
	}
	if got := TruncateRunes("aéb", 2); got != "aé" {
		t.Errorf("TruncateRunes = %q, want aé", got)
	}
}

// TestSealerOpensRowsSealedBefore: a password sealed by the sealer as it
// was before it moved onto pkg/sealbox still opens.
func TestSealerOpensRowsSealedBefore(t *testing.T) {
	t.Parallel()
	s, err := NewSealer("test-secret-key-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	old, _ := hex.DecodeString("0174866d88bff8465f80e31221b0ec7fbddbcf8a5225cc994ba9a4fe7132fcad6db6b839203787348623")
	got, err := s.Open(old)
	if err != nil || got != "imap-password" {
		t.Fatalf("Open = %q, %v; want imap-password", got, err)
	}
}
