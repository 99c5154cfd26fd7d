package store

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/services/mail/internal/mail"
)

// A person's part of the mail context (privacyapi, served by pkg/privacy):
// the messages they took part in. Mail links a message to a contact or a
// lead by address at read time (the participants index), and the contacts
// and leads the earlier phase found are the ones whose e-mail is the
// person's address: the messages with the address among their participants
// are exactly those linked to the person's contacts and leads. Erasing
// them needs no other context (they may be erased already).

// PrivacyEmail is one of the person's messages as their export lists it:
// the whole message, its body included (it is their correspondence), and
// the person's contacts and leads it is linked to.
type PrivacyEmail struct {
	ID         int64          `json:"id"`
	MessageID  string         `json:"message_id"`
	Subject    string         `json:"subject"`
	From       string         `json:"from"`
	To         []string       `json:"to"`
	Cc         []string       `json:"cc"`
	SentAt     timestamp.Time `json:"sent_at"`
	Direction  string         `json:"direction"`
	BodyText   string         `json:"body_text"`
	ContactIDs []int64        `json:"contact_ids"`
	LeadIDs    []int64        `json:"lead_ids"`
}

// PrivacyExport is the mail context's export document.
type PrivacyExport struct {
	Emails []PrivacyEmail `json:"emails"`
}

// personAddress is s's address as the participants index holds it.
func personAddress(s privacyapi.Subject) string { return strings.ToLower(strings.TrimSpace(s.Email)) }

// Export answers the messages with the person's address among their
// participants (the participants index), oldest first.
func (s *Store) Export(ctx context.Context, sub privacyapi.Subject) (privacyapi.ExportPart, error) {
	rows, err := s.db.Query(ctx, `
		SELECT m.id, m.message_id, m.subject, m.from_address, m.to_addresses, m.cc_addresses,
			m.sent_at, m.direction, m.body_text
		FROM messages m
		WHERE m.id IN (SELECT p.message_id FROM participants p WHERE p.address = $1)
		ORDER BY m.sent_at, m.id`, personAddress(sub))
	if err != nil {
		return privacyapi.ExportPart{}, fmt.Errorf("store: privacy export: %w", err)
	}
	emails, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (PrivacyEmail, error) {
		var e PrivacyEmail
		var sent time.Time
		err := row.Scan(&e.ID, &e.MessageID, &e.Subject, &e.From, &e.To, &e.Cc, &sent, &e.Direction, &e.BodyText)
		e.SentAt = timestamp.Of(sent)
		e.To, e.Cc = nonNil(e.To), nonNil(e.Cc)
		e.ContactIDs, e.LeadIDs = ids(sub.ContactIDs), ids(sub.LeadIDs)
		return e, err
	})
	if err != nil {
		return privacyapi.ExportPart{}, fmt.Errorf("store: privacy export: %w", err)
	}
	data, err := json.Marshal(PrivacyExport{Emails: emails})
	if err != nil {
		return privacyapi.ExportPart{}, err
	}
	return privacyapi.ExportPart{Data: data}, nil
}

// ids is a sorted copy of l, [] when empty.
func ids(l []int64) []int64 {
	out := slices.Clone(l)
	if out == nil {
		out = []int64{}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// personMessage is one of the person's messages as the erasure reads it.
type personMessage struct {
	id                int64
	from              string
	to, cc            []string
	subject, bodyText string
	// shared: another participant is neither the person, nor an address
	// an earlier erasure left, nor one of the CRM's mailboxes: the
	// message is someone else's too.
	shared bool
}

// Erase deletes the person's messages that are theirs alone (every other
// participant is one of the CRM's mailboxes, or was erased already),
// leaving a tombstone of each Message-ID so the IMAP sync does not store
// it again (Sync), and redacts the others: the person's address becomes
// "[erased]" in from, to and cc (display names are not stored), in the
// participants index (so no record with the address links them any more)
// and wherever the subject or body quotes it. It answers
// Erased{"emails"} and Redacted{"emails"}; a second erasure of the same
// person finds nothing left.
func (s *Store) Erase(ctx context.Context, tx pgx.Tx, sub privacyapi.Subject) (privacyapi.ErasePart, error) {
	addr := personAddress(sub)
	rows, err := tx.Query(ctx, `
		SELECT m.id, m.from_address, m.to_addresses, m.cc_addresses, m.subject, m.body_text,
			EXISTS (SELECT 1 FROM participants o WHERE o.message_id = m.id AND o.address NOT IN ($1, $2)
				AND o.address NOT IN (SELECT lower(btrim(mb.username)) FROM mailboxes mb))
		FROM messages m
		WHERE m.id IN (SELECT p.message_id FROM participants p WHERE p.address = $1)
		ORDER BY m.id
		FOR UPDATE OF m`, addr, privacyapi.Erased)
	if err != nil {
		return privacyapi.ErasePart{}, fmt.Errorf("store: privacy erase: %w", err)
	}
	msgs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (personMessage, error) {
		var m personMessage
		err := row.Scan(&m.id, &m.from, &m.to, &m.cc, &m.subject, &m.bodyText, &m.shared)
		return m, err
	})
	if err != nil {
		return privacyapi.ErasePart{}, fmt.Errorf("store: privacy erase: %w", err)
	}
	var deleted, redacted []int64
	for _, m := range msgs {
		if m.shared {
			redacted = append(redacted, m.id)
		} else {
			deleted = append(deleted, m.id)
		}
	}
	if len(deleted) > 0 {
		if _, err := tx.Exec(ctx, `
			WITH gone AS (DELETE FROM messages WHERE id = ANY($1) RETURNING message_id)
			INSERT INTO erased_messages (message_id_hash)
			SELECT sha256(convert_to(message_id, 'UTF8')) FROM gone
			ON CONFLICT DO NOTHING`, deleted); err != nil {
			return privacyapi.ErasePart{}, fmt.Errorf("store: privacy erase: delete: %w", err)
		}
	}
	if len(redacted) > 0 {
		if err := redactMessages(ctx, tx, addr, msgs); err != nil {
			return privacyapi.ErasePart{}, err
		}
	}
	// The person's address as an alias of a contact a merge joined, and
	// the aliases of their contacts, which the erasure deleted.
	tag, err := tx.Exec(ctx, `DELETE FROM contact_aliases WHERE address = $1 OR contact_id = ANY($2)`, addr, sub.ContactIDs)
	if err != nil {
		return privacyapi.ErasePart{}, fmt.Errorf("store: privacy erase: aliases: %w", err)
	}
	return privacyapi.ErasePart{Receipt: privacyapi.Receipt{
		Erased:   map[string]int64{"emails": int64(len(deleted)), "aliases": tag.RowsAffected()},
		Redacted: map[string]int64{"emails": int64(len(redacted))},
	}}, nil
}

// redactMessages replaces addr in the shared messages of msgs and in
// their participants.
func redactMessages(ctx context.Context, tx pgx.Tx, addr string, msgs []personMessage) error {
	re := addressPattern(addr)
	var b pgx.Batch
	var shared []int64
	for _, m := range msgs {
		if !m.shared {
			continue
		}
		shared = append(shared, m.id)
		body := eraseAddress(re, m.bodyText)
		b.Queue(`UPDATE messages SET from_address = $2, to_addresses = $3, cc_addresses = $4,
				subject = $5, body_text = $6, snippet = $7
			WHERE id = $1`,
			m.id, eraseIn(addr, m.from), eraseAll(addr, m.to), eraseAll(addr, m.cc),
			eraseAddress(re, m.subject), body, mail.Snippet(body))
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("store: privacy erase: redact: %w", err)
	}
	// The address's rows become "[erased]" ones of the same role (one per
	// role, however many persons were erased from the message).
	if _, err := tx.Exec(ctx, `
		WITH gone AS (DELETE FROM participants WHERE message_id = ANY($1) AND address = $2 RETURNING message_id, role)
		INSERT INTO participants (message_id, address, role)
		SELECT message_id, $3, role FROM gone
		ON CONFLICT DO NOTHING`, shared, addr, privacyapi.Erased); err != nil {
		return fmt.Errorf("store: privacy erase: participants: %w", err)
	}
	return nil
}

// eraseIn is a, or "[erased]" when a is addr (compared as the participants
// index compares).
func eraseIn(addr, a string) string {
	if strings.ToLower(strings.TrimSpace(a)) == addr {
		return privacyapi.Erased
	}
	return a
}

// eraseAll is l with every addr replaced, in order.
func eraseAll(addr string, l []string) []string {
	out := make([]string, len(l))
	for i, a := range l {
		out[i] = eraseIn(addr, a)
	}
	return out
}

// addressPattern matches addr case-insensitively where it stands as an
// address of its own in text: not inside a longer one ("joann@x.example"
// holds "ann@x.example", "ann@x.example.org" too). The characters around
// it are captured, to be put back.
func addressPattern(addr string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)(^|[^a-z0-9._%+\-])` + regexp.QuoteMeta(addr) + `($|[^a-z0-9_.\-]|\.$|\.[^a-z0-9])`)
}

// eraseAddress replaces every standalone occurrence of re's address in s
// with "[erased]". Two occurrences one character apart share that
// character, so it replaces until nothing changes.
func eraseAddress(re *regexp.Regexp, s string) string {
	for {
		next := re.ReplaceAllString(s, "${1}"+privacyapi.Erased+"${2}")
		if next == s {
			return s
		}
		s = next
	}
}

// Sync is the store as the IMAP sync writes to it: a message a privacy
// erasure deleted (its Message-ID's tombstone in erased_messages) is
// skipped, not stored again, when a sync reads its folder anew (a new
// UIDVALIDITY, a mailbox moved to another server or folder).
type Sync struct{ *Store }

var _ mail.Store = Sync{}

// ForSync is s as the IMAP sync uses it.
func (s *Store) ForSync() Sync { return Sync{s} }

// CreateMessage stores m unless it was erased: then it answers the zero
// message, not created, and stores nothing. An erasure that commits while
// the insert runs is caught after it: the message inserted meanwhile is
// deleted again.
func (s Sync) CreateMessage(ctx context.Context, m mail.NewMessage) (mail.Message, bool, error) {
	erased, err := isErased(ctx, s.db, m.MessageID)
	if err != nil || erased {
		return mail.Message{}, false, err
	}
	out, created, err := s.Store.CreateMessage(ctx, m)
	if err != nil || !created {
		return out, created, err
	}
	tag, err := s.db.Exec(ctx, `DELETE FROM messages m WHERE m.id = $1
		AND EXISTS (SELECT 1 FROM erased_messages e WHERE e.message_id_hash = sha256(convert_to(m.message_id, 'UTF8')))`, out.ID)
	if err != nil {
		return mail.Message{}, false, fmt.Errorf("store: erased message: %w", err)
	}
	if tag.RowsAffected() > 0 {
		return mail.Message{}, false, nil
	}
	return out, created, nil
}

// isErased reports whether a privacy erasure deleted the message with
// messageID.
func isErased(ctx context.Context, q db.Querier, messageID string) (bool, error) {
	var erased bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM erased_messages
		WHERE message_id_hash = sha256(convert_to($1, 'UTF8')))`, messageID).Scan(&erased); err != nil {
		return false, fmt.Errorf("store: erased message: %w", err)
	}
	return erased, nil
}
