package mail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/list"
)

// Caller is who asks: mailboxes belong to their owner; an admin sees all.
type Caller struct {
	UserID int64
	Admin  bool
}

// CanRead reports whether c may read m by its id. A message synced from a
// mailbox is private to the mailbox's owner and admins; any other message
// (posted by a client, not synced) is readable by every user. Everyone reads a
// private message through a contact or lead it is linked to (see
// Service.Message), because every JWT user reads every linked email.
func (c Caller) CanRead(m Message) bool {
	return m.OwnerID == nil || c.Admin || (c.UserID > 0 && *m.OwnerID == c.UserID)
}

// ownerFilter is the owner a caller is confined to, 0 for an admin.
func (c Caller) ownerFilter() int64 {
	if c.Admin {
		return 0
	}
	return c.UserID
}

// Service holds the mail context's use cases.
type Service struct {
	store    Store
	contacts Contacts
	leads    Leads
	// sealer is nil when CRM_SECRET_KEY is not configured: messages and
	// linked emails work, mailboxes are unavailable.
	sealer *Sealer
	queue  SyncQueue
	now    func() time.Time
}

// NewService wires the use cases. sealer and queue may be nil, which turns
// mailboxes off (unavailable) without affecting messages.
func NewService(store Store, contacts Contacts, leads Leads, sealer *Sealer, queue SyncQueue) (*Service, error) {
	if store == nil || contacts == nil || leads == nil {
		return nil, errors.New("mail: store, contacts and leads are required")
	}
	return &Service{store: store, contacts: contacts, leads: leads, sealer: sealer, queue: queue, now: time.Now}, nil
}

// CreateMessage validates and stores a message; created is false when
// the message_id was already stored (a no-op returning the stored one).
func (s *Service) CreateMessage(ctx context.Context, in MessageInput, by int64) (Message, bool, error) {
	m, err := ValidateMessage(in, s.now())
	if err != nil {
		return Message{}, false, err
	}
	if by > 0 {
		m.CreatedBy = &by
	}
	return s.store.CreateMessage(ctx, m)
}

// Message returns one stored message. Without via, the caller must be
// allowed to read it (CanRead). With via, it is read as one of that
// record's linked emails: any caller may, and it must be linked to the
// record. Either way a message the caller may not read is the same
// not_found as one that does not exist.
func (s *Service) Message(ctx context.Context, c Caller, id int64, via *RecordRef) (Message, error) {
	if via == nil {
		m, err := s.store.Message(ctx, id)
		if err != nil {
			return Message{}, err
		}
		if !c.CanRead(m) {
			return Message{}, fault.NotFound("email")
		}
		return m, nil
	}
	// The record first, so its answer (not found, unavailable) never
	// depends on the message.
	addresses, err := s.recordAddresses(ctx, *via)
	if err != nil {
		return Message{}, err
	}
	m, err := s.store.Message(ctx, id)
	if err != nil {
		return Message{}, err
	}
	if !slices.ContainsFunc(addresses, func(a string) bool { return LinkedTo(m.EmailSummary, a) }) {
		return Message{}, fault.NotFound("email")
	}
	return m, nil
}

// LinkedQuery asks for a page of the emails linked to one contact or
// lead. They always come newest first (sent_at, then id): the query's
// sort is not read.
type LinkedQuery struct {
	list.Query
	Record RecordRef
}

// Linked lists the messages whose participants include the record's
// email (a contact's aliases too), newest first. A record without an
// address has none.
func (s *Service) Linked(ctx context.Context, q LinkedQuery) ([]Summary, int, error) {
	addresses, err := s.recordAddresses(ctx, q.Record)
	if err != nil {
		return nil, 0, err
	}
	if len(addresses) == 0 {
		return []Summary{}, 0, nil
	}
	return s.store.Linked(ctx, addresses, q.Query)
}

// recordAddresses are the addresses a record's messages are linked by:
// its email, and for a contact the addresses merges joined into it.
func (s *Service) recordAddresses(ctx context.Context, r RecordRef) ([]string, error) {
	email, err := s.recordEmail(ctx, r)
	if err != nil {
		return nil, err
	}
	var out []string
	if a := normAddress(email); a != "" {
		out = append(out, a)
	}
	if r.Kind == KindLead {
		return out, nil
	}
	aliases, err := s.store.Aliases(ctx, r.ID)
	if err != nil {
		return nil, err
	}
	return append(out, aliases...), nil
}

func (s *Service) mailboxesEnabled() error {
	if s.sealer == nil || s.queue == nil {
		return fault.Unavailablef(0, "mailbox sync is not configured on this server (CRM_SECRET_KEY)")
	}
	return nil
}

// CreateMailbox connects a mailbox for the caller and queues its first sync.
func (s *Service) CreateMailbox(ctx context.Context, c Caller, in MailboxInput) (Mailbox, error) {
	if err := s.mailboxesEnabled(); err != nil {
		return Mailbox{}, err
	}
	v, err := validateMailbox(in, nil)
	if err != nil {
		return Mailbox{}, err
	}
	if v.fields.PasswordSealed, err = s.sealer.Seal(v.password); err != nil {
		return Mailbox{}, err
	}
	mb, err := s.store.CreateMailbox(ctx, c.UserID, v.fields)
	if err != nil {
		return Mailbox{}, err
	}
	s.kick(ctx, mb.ID)
	return mb, nil
}

// UpdateMailbox changes the connection settings (a fixed password, a new
// host); the next sync uses them at once. Sending the stored password
// somewhere else needs that password: a change of host, port or username,
// or turning TLS off, without a new password is refused (validate).
func (s *Service) UpdateMailbox(ctx context.Context, c Caller, id int64, in MailboxInput) (Mailbox, error) {
	if err := s.mailboxesEnabled(); err != nil {
		return Mailbox{}, err
	}
	mb, err := s.store.UpdateMailbox(ctx, id, c.ownerFilter(), func(cur Mailbox) (MailboxFields, error) {
		v, err := validateMailbox(in, &cur)
		if err != nil {
			return MailboxFields{}, err
		}
		if v.password != "" {
			if v.fields.PasswordSealed, err = s.sealer.Seal(v.password); err != nil {
				return MailboxFields{}, err
			}
		}
		return v.fields, nil
	})
	if err != nil {
		return Mailbox{}, err
	}
	s.kick(ctx, mb.ID)
	return mb, nil
}

// Mailbox returns one of the caller's mailboxes (any, for an admin).
func (s *Service) Mailbox(ctx context.Context, c Caller, id int64) (Mailbox, error) {
	if err := s.mailboxesEnabled(); err != nil {
		return Mailbox{}, err
	}
	return s.store.Mailbox(ctx, id, c.ownerFilter())
}

// Mailboxes lists the caller's mailboxes (all, for an admin).
func (s *Service) Mailboxes(ctx context.Context, c Caller) ([]Mailbox, error) {
	if err := s.mailboxesEnabled(); err != nil {
		return nil, err
	}
	return s.store.Mailboxes(ctx, c.ownerFilter())
}

// DeleteMailbox disconnects a mailbox. Its messages stay: they are the
// CRM's record of the conversation, linked to contacts by address.
func (s *Service) DeleteMailbox(ctx context.Context, c Caller, id int64) error {
	if err := s.mailboxesEnabled(); err != nil {
		return err
	}
	return s.store.DeleteMailbox(ctx, id, c.ownerFilter())
}

// SyncNow queues a sync of the mailbox now.
func (s *Service) SyncNow(ctx context.Context, c Caller, id int64) (Mailbox, error) {
	if err := s.mailboxesEnabled(); err != nil {
		return Mailbox{}, err
	}
	mb, err := s.store.Mailbox(ctx, id, c.ownerFilter())
	if err != nil {
		return Mailbox{}, err
	}
	if err := s.queue.EnqueueSync(ctx, id); err != nil {
		return Mailbox{}, fmt.Errorf("queue sync: %w: %w", err, fault.Unavailablef(5, "the sync queue is unavailable"))
	}
	return mb, nil
}

// kick queues a sync after a change; a failure only delays it to the next
// scheduled run, so it does not fail the request.
func (s *Service) kick(ctx context.Context, id int64) {
	if err := s.queue.EnqueueSync(context.WithoutCancel(ctx), id); err != nil {
		slog.WarnContext(ctx, "queue mailbox sync", "mailbox_id", id, "error", err.Error())
	}
}
