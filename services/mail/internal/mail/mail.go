// Package mail is the mail context's core: synced messages, the mailboxes
// they are fetched from, how a message is linked to a contact or lead (by
// address, at read time), and the small interfaces storage, the other
// contexts and the sync queue implement.
package mail

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/opencrm/crm/pkg/contract/mailapi"
	"github.com/opencrm/crm/pkg/list"
)

// Directions of a message, seen from the CRM user's side.
const (
	Inbound  = "inbound"
	Outbound = "outbound"
)

// Participant roles, as stored in the normalised participants table.
const (
	RoleFrom = "from"
	RoleTo   = "to"
	RoleCc   = "cc"
)

// Mailbox sync states: pending until the first sync finishes.
const (
	StatusPending = "pending"
	StatusOK      = "ok"
	StatusError   = "error"
)

// Limits of a stored message. They bound what one message may cost in
// storage and in a list response; synced messages are truncated to them
// rather than refused, because the mailbox cannot be fixed by the user.
const (
	MaxMessageID  = 998 // RFC 5322 line length
	MaxSubject    = 998
	MaxBodyBytes  = 1 << 20
	MaxRecipients = 500
	SnippetLen    = 200
)

// Summary is a message as listed under a contact or lead: everything but
// the body, which a list of 100 messages should not carry.
type Summary = mailapi.EmailSummary

// LinkedTo reports whether address (a record's email) is among the
// participants of m, compared as the participants index stores them, so it
// agrees with the linked-email lists.
func LinkedTo(m Summary, address string) bool {
	a := normAddress(address)
	if a == "" {
		return false
	}
	if normAddress(m.From) == a {
		return true
	}
	for _, l := range [][]string{m.To, m.Cc} {
		for _, x := range l {
			if normAddress(x) == a {
				return true
			}
		}
	}
	return false
}

// Ref names a stored message without its content: the answer to a repeated
// message_id whose stored copy the caller may not read.
type Ref = mailapi.EmailRef

// Message is a stored message with its text body, and who may read it by
// id.
type Message struct {
	mailapi.Email
	// OwnerID is the owner of the mailbox the message was first synced
	// from (kept when the mailbox is deleted; 0 when that owner is lost),
	// nil for a message a client posted rather than synced. Never shown:
	// see Caller.CanRead.
	OwnerID *int64 `json:"-"`
}

// NewMessage is a validated message ready to store. Addresses are bare
// (display names dropped); participants are derived from them.
type NewMessage struct {
	MessageID string
	From      string
	To, Cc    []string
	Subject   string
	BodyText  string
	SentAt    time.Time
	Direction string
	MailboxID *int64
	CreatedBy *int64
}

// Participants returns the lower-cased, de-duplicated (address, role)
// pairs of the message.
func (m NewMessage) Participants() []Participant {
	seen := map[Participant]bool{}
	var out []Participant
	add := func(addr, role string) {
		p := Participant{Address: normAddress(addr), Role: role}
		if p.Address == "" || seen[p] {
			return
		}
		seen[p] = true
		out = append(out, p)
	}
	add(m.From, RoleFrom)
	for _, a := range m.To {
		add(a, RoleTo)
	}
	for _, a := range m.Cc {
		add(a, RoleCc)
	}
	return out
}

// normAddress is an address as the participants index holds it.
func normAddress(a string) string { return strings.ToLower(strings.TrimSpace(a)) }

// Participant is one normalised address of a message.
type Participant struct {
	Address string
	Role    string
}

// Snippet is the first SnippetLen characters of body with every run of
// whitespace collapsed to one space.
func Snippet(body string) string {
	var b strings.Builder
	n := 0
	space := false
	for _, r := range body {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			if n+1 >= SnippetLen {
				break
			}
			b.WriteByte(' ')
			n++
			space = false
		}
		if r == utf8.RuneError || unicode.IsControl(r) {
			continue
		}
		b.WriteRune(r)
		n++
		if n >= SnippetLen {
			break
		}
	}
	return b.String()
}

// NormalizeMessageID gives a message id its RFC 5322 form, "<left@right>":
// whitespace trimmed and angle brackets added when the caller left them
// out, so "a@b" and "<a@b>" are one message and an integration that
// matches its own Message-ID header finds it as it sent it. "" stays ""
// (the id is required).
func NormalizeMessageID(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '<' && s[len(s)-1] == '>' {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	if s == "" {
		return ""
	}
	return "<" + s + ">"
}

// Clean makes text storable: valid UTF-8 and no NUL bytes, which
// PostgreSQL text refuses.
func Clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "")
}

// Truncate cuts s to at most max bytes without splitting a UTF-8 sequence.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// TruncateRunes cuts s to at most max characters.
func TruncateRunes(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	i, n := 0, 0
	for i = range s {
		if n == max {
			break
		}
		n++
	}
	return s[:i]
}

// Mailbox is a connected IMAP mailbox as the API shows it: never with its
// password.
type Mailbox = mailapi.Mailbox

// MailboxSecret is a mailbox with its sealed password, for the syncer only.
type MailboxSecret struct {
	Mailbox
	PasswordSealed []byte
}

// MailboxFields are the connection settings of a mailbox, validated.
type MailboxFields struct {
	Host     string
	Port     int
	TLS      bool
	Username string
	Folder   string
	// PasswordSealed is nil on an update that keeps the password.
	PasswordSealed []byte
}

// SyncOutcome is what one sync run records on the mailbox.
type SyncOutcome struct {
	UIDValidity uint32
	LastUID     uint32
	// Err is the client-safe description of the failure, "" on success.
	Err string
}

// MessageStore keeps messages.
type MessageStore interface {
	// CreateMessage stores m unless its message_id exists; created reports
	// which, and the stored message is returned either way.
	CreateMessage(ctx context.Context, m NewMessage) (msg Message, created bool, err error)
	// Message returns any message by id; who may read it is the
	// service's decision.
	Message(ctx context.Context, id int64) (Message, error)
	// Linked lists one page of the messages with one of the participant
	// addresses (lower case), newest first, and the total.
	Linked(ctx context.Context, addresses []string, page list.Query) ([]Summary, int, error)
	// Aliases are the addresses merges gave a contact (mergeapi.Move's
	// emails).
	Aliases(ctx context.Context, contactID int64) ([]string, error)
	// AddAliases gives contact into the addresses of a merge and the
	// merged contacts' aliases; it answers how many it added.
	AddAliases(ctx context.Context, into int64, merged []int64, addresses []string) (int64, error)
}

// MailboxStore keeps mailboxes and their sync state.
type MailboxStore interface {
	CreateMailbox(ctx context.Context, ownerID int64, f MailboxFields) (Mailbox, error)
	// Mailbox returns the mailbox; ownerID 0 means any owner (admin).
	Mailbox(ctx context.Context, id, ownerID int64) (Mailbox, error)
	// Mailboxes lists mailboxes, ownerID 0 meaning all.
	Mailboxes(ctx context.Context, ownerID int64) ([]Mailbox, error)
	// UpdateMailbox locks the mailbox, asks change for the new settings
	// given the current ones, and stores them; an error from change is
	// returned and nothing is written. Deciding under the lock means a
	// concurrent update cannot slip between the check and the write.
	UpdateMailbox(ctx context.Context, id, ownerID int64, change func(cur Mailbox) (MailboxFields, error)) (Mailbox, error)
	DeleteMailbox(ctx context.Context, id, ownerID int64) error
	// MailboxIDs lists every mailbox id, for the periodic sync.
	MailboxIDs(ctx context.Context) ([]int64, error)
	// AcquireSync leases the mailbox for a sync until now+lease under a
	// fresh token; ok is false when another sync holds it.
	AcquireSync(ctx context.Context, id int64, lease time.Duration) (m MailboxSecret, token int64, ok bool, err error)
	// FinishSync records the outcome and releases the lease. It changes
	// nothing when the lease was lost (the settings changed meanwhile, so
	// what this sync read belongs to the old ones).
	FinishSync(ctx context.Context, id, token int64, o SyncOutcome) error
	// Checkpoint records progress inside a running sync, so a crash
	// resumes after the last stored message rather than from scratch.
	Checkpoint(ctx context.Context, id, token int64, uidValidity, lastUID uint32) error
}

// Store is everything the mail context keeps.
type Store interface {
	MessageStore
	MailboxStore
}

// SyncQueue asks for a mailbox to be synced soon.
type SyncQueue interface {
	EnqueueSync(ctx context.Context, mailboxID int64) error
}
