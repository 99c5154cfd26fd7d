// Package store keeps the mail context in PostgreSQL: messages with their
// normalised participants, and mailboxes with their sync state.
package store

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/services/mail/internal/mail"
)

// Store implements mail.Store.
type Store struct{ db *db.DB }

var _ mail.Store = (*Store)(nil)

// New returns a store on d.
func New(d *db.DB) (*Store, error) {
	if d == nil {
		return nil, errors.New("store: db is required")
	}
	return &Store{db: d}, nil
}

const summaryCols = `m.id, m.message_id, m.from_address, m.to_addresses, m.cc_addresses, m.subject,
	m.snippet, m.sent_at, m.direction, m.mailbox_id, m.created_at`

func scanSummary(row pgx.CollectableRow) (mail.Summary, error) {
	var s mail.Summary
	err := scanSummaryInto(row, &s)
	return s, err
}

func scanMessage(row pgx.CollectableRow) (mail.Message, error) {
	var m mail.Message
	err := scanSummaryInto(row, &m.EmailSummary, &m.OwnerID, &m.BodyText)
	return m, err
}

// scanSummaryInto reads summaryCols, then extra, into s.
func scanSummaryInto(row pgx.CollectableRow, s *mail.Summary, extra ...any) error {
	err := row.Scan(append([]any{&s.ID, &s.MessageID, &s.From, &s.To, &s.Cc, &s.Subject,
		&s.Snippet, &s.SentAt, &s.Direction, &s.MailboxID, &s.CreatedAt}, extra...)...)
	if s.To == nil {
		s.To = []string{}
	}
	if s.Cc == nil {
		s.Cc = []string{}
	}
	return err
}

func oneMessage(ctx context.Context, q db.Querier, where string, arg any) (mail.Message, error) {
	rows, err := q.Query(ctx, `SELECT `+summaryCols+`, m.owner_id, m.body_text FROM messages m WHERE `+where, arg)
	if err != nil {
		return mail.Message{}, fmt.Errorf("store: message: %w", err)
	}
	m, err := pgx.CollectExactlyOneRow(rows, scanMessage)
	if db.IsNoRows(err) {
		return mail.Message{}, fault.NotFound("email")
	}
	if err != nil {
		return mail.Message{}, fmt.Errorf("store: message: %w", err)
	}
	return m, nil
}

// CreateMessage inserts m and its participants unless the message_id is
// stored already. ON CONFLICT makes concurrent duplicates safe: exactly one
// insert wins, the others read the winner's row. A message from a mailbox
// records the mailbox's owner, who keeps it private (mail.Caller.CanRead);
// a duplicate never changes the stored owner, so syncing or posting a copy
// of someone's message (a Message-ID is easy to learn from References
// headers) does not grant its reader the stored one.
func (s *Store) CreateMessage(ctx context.Context, m mail.NewMessage) (mail.Message, bool, error) {
	var out mail.Message
	created := false
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			INSERT INTO messages AS m (message_id, from_address, to_addresses, cc_addresses, subject,
				body_text, snippet, sent_at, direction, mailbox_id, created_by, owner_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
				(SELECT mb.owner_id FROM mailboxes mb WHERE mb.id = $10))
			ON CONFLICT (message_id) DO NOTHING
			RETURNING `+summaryCols+`, m.owner_id, m.body_text`,
			m.MessageID, m.From, nonNil(m.To), nonNil(m.Cc), m.Subject, m.BodyText,
			mail.Snippet(m.BodyText), m.SentAt, m.Direction, m.MailboxID, m.CreatedBy)
		if err == nil {
			out, err = pgx.CollectExactlyOneRow(rows, scanMessage)
		}
		switch {
		case db.IsNoRows(err):
			out, err = oneMessage(ctx, tx, "m.message_id = $1", m.MessageID)
			return err
		case err != nil:
			return fmt.Errorf("store: insert message: %w", err)
		}
		created = true
		var addrs, roles []string
		for _, p := range m.Participants() {
			addrs = append(addrs, p.Address)
			roles = append(roles, p.Role)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO participants (message_id, address, role)
			SELECT $1, a, r FROM unnest($2::text[], $3::text[]) AS t(a, r)`,
			out.ID, addrs, roles); err != nil {
			return fmt.Errorf("store: insert participants: %w", err)
		}
		return nil
	})
	return out, created, err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Message returns one message by id.
func (s *Store) Message(ctx context.Context, id int64) (mail.Message, error) {
	return oneMessage(ctx, s.db, "m.id = $1", id)
}

// Linked lists one page of the messages with one of the participant
// addresses, newest first, ties broken by id so pages are stable. The order is the
// only one linked emails have, so the page's sort is not read.
func (s *Store) Linked(ctx context.Context, addresses []string, page list.Query) ([]mail.Summary, int, error) {
	var total int
	if err := s.db.QueryRow(ctx,
		`SELECT count(DISTINCT message_id) FROM participants WHERE address = ANY($1)`, addresses).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("store: count linked: %w", err)
	}
	if total == 0 {
		return []mail.Summary{}, 0, nil
	}
	rows, err := s.db.Query(ctx, `
		SELECT `+summaryCols+` FROM messages m
		WHERE m.id IN (SELECT p.message_id FROM participants p WHERE p.address = ANY($1))
		ORDER BY m.sent_at DESC, m.id DESC
		LIMIT $2 OFFSET $3`, addresses, page.PerPage, page.Offset())
	if err != nil {
		return nil, 0, fmt.Errorf("store: linked: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanSummary)
	if err != nil {
		return nil, 0, fmt.Errorf("store: linked: %w", err)
	}
	return list, total, nil
}

const mailboxCols = `id, owner_id, host, port, tls, username, folder, status, last_error,
	last_synced_at, uidvalidity, last_uid, created_at, updated_at`

func scanMailbox(row pgx.CollectableRow) (mail.Mailbox, error) {
	var m mail.Mailbox
	err := scanMailboxInto(row, &m)
	return m, err
}

// scanMailboxInto reads mailboxCols, then extra, into m.
func scanMailboxInto(row pgx.CollectableRow, m *mail.Mailbox, extra ...any) error {
	var uv, uid int64
	err := row.Scan(append([]any{&m.ID, &m.OwnerID, &m.Host, &m.Port, &m.TLS, &m.Username, &m.Folder,
		&m.Status, &m.LastError, &m.LastSyncedAt, &uv, &uid, &m.CreatedAt, &m.UpdatedAt}, extra...)...)
	m.UIDValidity, m.LastUID = uint32(uv), uint32(uid)
	return err
}

func oneMailbox(rows pgx.Rows, err error) (mail.Mailbox, error) {
	if err != nil {
		return mail.Mailbox{}, fmt.Errorf("store: mailbox: %w", err)
	}
	m, err := pgx.CollectExactlyOneRow(rows, scanMailbox)
	if db.IsNoRows(err) {
		return mail.Mailbox{}, fault.NotFound("mailbox")
	}
	if err != nil {
		return mail.Mailbox{}, fmt.Errorf("store: mailbox: %w", err)
	}
	return m, nil
}

// CreateMailbox stores a new mailbox owned by ownerID.
func (s *Store) CreateMailbox(ctx context.Context, ownerID int64, f mail.MailboxFields) (mail.Mailbox, error) {
	return oneMailbox(s.db.Query(ctx, `
		INSERT INTO mailboxes (owner_id, host, port, tls, username, password_sealed, folder)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		RETURNING `+mailboxCols,
		ownerID, f.Host, f.Port, f.TLS, f.Username, f.PasswordSealed, f.Folder))
}

// Mailbox returns a mailbox, confined to ownerID unless it is 0.
func (s *Store) Mailbox(ctx context.Context, id, ownerID int64) (mail.Mailbox, error) {
	return oneMailbox(s.db.Query(ctx, `SELECT `+mailboxCols+` FROM mailboxes
		WHERE id = $1 AND ($2 = 0 OR owner_id = $2)`, id, ownerID))
}

// Mailboxes lists mailboxes by id, confined to ownerID unless it is 0.
func (s *Store) Mailboxes(ctx context.Context, ownerID int64) ([]mail.Mailbox, error) {
	rows, err := s.db.Query(ctx, `SELECT `+mailboxCols+` FROM mailboxes
		WHERE $1 = 0 OR owner_id = $1 ORDER BY id`, ownerID)
	if err != nil {
		return nil, fmt.Errorf("store: mailboxes: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanMailbox)
	if err != nil {
		return nil, fmt.Errorf("store: mailboxes: %w", err)
	}
	return list, nil
}

// UpdateMailbox replaces the connection settings with what change decides
// from the current ones, under the row's lock. When the server, account or
// folder changes, the sync position and any running sync's lease are
// dropped: UIDs of the old folder mean nothing in the new one.
func (s *Store) UpdateMailbox(ctx context.Context, id, ownerID int64,
	change func(cur mail.Mailbox) (mail.MailboxFields, error)) (mail.Mailbox, error) {
	var out mail.Mailbox
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		cur, err := oneMailbox(tx.Query(ctx, `SELECT `+mailboxCols+` FROM mailboxes
			WHERE id = $1 AND ($2 = 0 OR owner_id = $2) FOR UPDATE`, id, ownerID))
		if err != nil {
			return err
		}
		f, err := change(cur)
		if err != nil {
			return err
		}
		// SET expressions read the row as it was before the update.
		out, err = oneMailbox(tx.Query(ctx, `
			UPDATE mailboxes SET host = $2, port = $3, tls = $4, username = $5, folder = $6,
				password_sealed = COALESCE($7, password_sealed),
				uidvalidity = CASE WHEN `+moved+` THEN 0 ELSE uidvalidity END,
				last_uid = CASE WHEN `+moved+` THEN 0 ELSE last_uid END,
				sync_token = CASE WHEN `+moved+` THEN NULL ELSE sync_token END,
				sync_lease_until = CASE WHEN `+moved+` THEN NULL ELSE sync_lease_until END,
				updated_at = now()
			WHERE id = $1
			RETURNING `+mailboxCols,
			id, f.Host, f.Port, f.TLS, f.Username, f.Folder, f.PasswordSealed))
		return err
	})
	if err != nil {
		return mail.Mailbox{}, err
	}
	return out, nil
}

// moved is true in UpdateMailbox when the server, account or folder changes.
const moved = `(host <> $2 OR port <> $3 OR username <> $5 OR folder <> $6)`

// DeleteMailbox removes a mailbox; its messages stay, unattached.
func (s *Store) DeleteMailbox(ctx context.Context, id, ownerID int64) error {
	tag, err := s.db.Exec(ctx, `DELETE FROM mailboxes WHERE id = $1 AND ($2 = 0 OR owner_id = $2)`, id, ownerID)
	if err != nil {
		return fmt.Errorf("store: delete mailbox: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fault.NotFound("mailbox")
	}
	return nil
}

// MailboxIDs lists every mailbox.
func (s *Store) MailboxIDs(ctx context.Context) ([]int64, error) {
	rows, err := s.db.Query(ctx, `SELECT id FROM mailboxes ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: mailbox ids: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("store: mailbox ids: %w", err)
	}
	return ids, nil
}

// AcquireSync takes the mailbox's sync lease if it is free or expired.
func (s *Store) AcquireSync(ctx context.Context, id int64, lease time.Duration) (mail.MailboxSecret, int64, bool, error) {
	token, err := randomToken()
	if err != nil {
		return mail.MailboxSecret{}, 0, false, err
	}
	rows, err := s.db.Query(ctx, `
		UPDATE mailboxes SET sync_token = $2, sync_lease_until = now() + make_interval(secs => $3)
		WHERE id = $1 AND (sync_lease_until IS NULL OR sync_lease_until < now())
		RETURNING `+mailboxCols+`, password_sealed`, id, token, lease.Seconds())
	if err != nil {
		return mail.MailboxSecret{}, 0, false, fmt.Errorf("store: acquire sync: %w", err)
	}
	m, err := pgx.CollectExactlyOneRow(rows, func(row pgx.CollectableRow) (mail.MailboxSecret, error) {
		var m mail.MailboxSecret
		err := scanMailboxInto(row, &m.Mailbox, &m.PasswordSealed)
		return m, err
	})
	if db.IsNoRows(err) {
		// Held by another sync, or gone.
		if _, err := s.Mailbox(ctx, id, 0); err != nil {
			return mail.MailboxSecret{}, 0, false, err
		}
		return mail.MailboxSecret{}, 0, false, nil
	}
	if err != nil {
		return mail.MailboxSecret{}, 0, false, fmt.Errorf("store: acquire sync: %w", err)
	}
	return m, token, true, nil
}

// Checkpoint moves the sync position forward under the lease.
func (s *Store) Checkpoint(ctx context.Context, id, token int64, uidValidity, lastUID uint32) error {
	if _, err := s.db.Exec(ctx, `UPDATE mailboxes SET uidvalidity = $3, last_uid = $4
		WHERE id = $1 AND sync_token = $2`, id, token, int64(uidValidity), int64(lastUID)); err != nil {
		return fmt.Errorf("store: checkpoint: %w", err)
	}
	return nil
}

// FinishSync records the outcome and frees the lease. last_synced_at is
// the end of the latest attempt; status and last_error tell how it went.
func (s *Store) FinishSync(ctx context.Context, id, token int64, o mail.SyncOutcome) error {
	if _, err := s.db.Exec(ctx, `
		UPDATE mailboxes SET
			status = CASE WHEN $3 = '' THEN 'ok' ELSE 'error' END,
			last_error = NULLIF($3, ''),
			last_synced_at = now(),
			uidvalidity = $4, last_uid = $5,
			sync_token = NULL, sync_lease_until = NULL,
			updated_at = now()
		WHERE id = $1 AND sync_token = $2`,
		id, token, o.Err, int64(o.UIDValidity), int64(o.LastUID)); err != nil {
		return fmt.Errorf("store: finish sync: %w", err)
	}
	return nil
}

func randomToken() (int64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("store: token: %w", err)
	}
	return int64(binary.BigEndian.Uint64(b[:]) >> 1), nil
}
