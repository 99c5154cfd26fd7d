package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/audit"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/list/listsql"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

// Context is the name identity's own audit entries carry.
const Context = "identity"

// auditRow is an audit_log row as the chain hashes it: actor and details
// are PostgreSQL's text of their jsonb values, which is canonical (keys
// sorted, one spacing), so the bytes hashed at append are the bytes read
// back at verify, whatever JSON the producer wrote.
type auditRow struct {
	ID                   int64
	At                   time.Time
	Actor                string
	Action               string
	TargetType, TargetID string
	Details              string
	IP, UserAgent        string
	RequestID            string
	Context, SourceID    string
	PrevHash, Hash       []byte
}

// atLayout is the timestamp of the canonical encoding: UTC, microseconds
// (PostgreSQL's precision).
const atLayout = "2006-01-02T15:04:05.000000Z"

// canonical is the one encoding of an entry's fields the chain hashes: a
// JSON array of them in this fixed order (the hashes are not JSON
// parsed again, only compared):
//
//	[id, at, context, source_id, actor, action, target_type, target_id,
//	 details, ip, user_agent, request_id]
//
// with at in atLayout, actor and details as the text of their jsonb
// values, and source_id "" for an entry of identity's own.
func (r auditRow) canonical() []byte {
	b, _ := json.Marshal([]any{r.ID, r.At.UTC().Format(atLayout), r.Context, r.SourceID, r.Actor, r.Action,
		r.TargetType, r.TargetID, r.Details, r.IP, r.UserAgent, r.RequestID}) // strings and an int: cannot fail
	return b
}

// chainHash is SHA-256(prev || canonical(r)): the hash an entry carries.
func chainHash(prev []byte, r auditRow) []byte {
	h := sha256.New()
	h.Write(prev)
	h.Write(r.canonical())
	return h.Sum(nil)
}

// Bounds of the free-text fields an entry stores.
const (
	maxAuditText      = 200
	maxAuditUserAgent = 512
)

// clean makes s storable text of at most max bytes: valid UTF-8, without
// NUL (PostgreSQL refuses both), cut at a rune boundary.
func clean(s string, max int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

// own is an entry of identity's own action, stamped as audit.Message
// stamps another context's (now, ctx's actor, client and request id),
// without a source: it is appended here, not consumed from a stream.
// details is a value encoding to a JSON object (nil for none): the store's
// own maps and structs, so encoding cannot fail.
func own(ctx context.Context, action, object string, id int64, details any) identityapi.AuditMessage {
	e := audit.Entry{Action: action, Details: details}
	if object != "" {
		e.Object, e.ID = object, strconv.FormatInt(id, 10)
	}
	m, _ := audit.Message(ctx, Context, e)
	m.Source = ""
	return m
}

// as makes m's actor the user u (a login: the caller is not
// authenticated yet, the account is who acted).
func as(m identityapi.AuditMessage, u identity.User) identityapi.AuditMessage {
	m.Actor = identityapi.AuditActor{Type: "user", ID: &u.ID, Name: u.Name}
	return m
}

// change is one field's value before and after in an entry's details.
type change struct {
	Field string `json:"field"`
	From  any    `json:"from,omitempty"`
	To    any    `json:"to,omitempty"`
}

// appendAudit appends msgs to the log inside tx, in order, and says how
// many it appended: an entry of another context whose (context, source)
// is in the log already is skipped. It locks the head row, so call it last
// in a transaction (every other lock first): appends of all transactions
// serialise there and the chain follows commit order.
func appendAudit(ctx context.Context, tx pgx.Tx, msgs ...identityapi.AuditMessage) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	var lastID int64
	var last []byte
	if err := tx.QueryRow(ctx, `SELECT last_id, last_hash FROM audit_head FOR UPDATE`).Scan(&lastID, &last); err != nil {
		return 0, fmt.Errorf("audit head: %w", err)
	}
	actors, details := make([]string, len(msgs)), make([]string, len(msgs))
	for i, m := range msgs {
		a, _ := json.Marshal(identityapi.AuditActor{Type: clean(m.Actor.Type, maxAuditText), ID: m.Actor.ID,
			Name: clean(m.Actor.Name, maxAuditText)})
		actors[i] = string(a)
		details[i] = "{}"
		if d := bytes.TrimSpace(m.Details); len(d) > 0 && string(d) != "null" {
			// jsonb refuses the NUL character a JSON string may escape.
			details[i] = strings.ReplaceAll(string(d), `\u0000`, `\ufffd`)
		}
	}
	// The canonical texts: PostgreSQL's own printing of the jsonb values.
	rows, err := tx.Query(ctx, `SELECT a::jsonb::text, d::jsonb::text
		FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u (a, d, n) ORDER BY n`, actors, details)
	if err != nil {
		return 0, fmt.Errorf("audit canonical json: %w", err)
	}
	canon, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ A, D string }])
	if err != nil {
		return 0, fmt.Errorf("audit canonical json: %w", err)
	}
	n := 0
	for i, m := range msgs {
		at := m.At
		if at.IsZero() {
			at = time.Now()
		}
		r := auditRow{ID: lastID + 1, At: at.UTC().Truncate(time.Microsecond), Actor: canon[i].A,
			Action: clean(m.Action, maxAuditText), Details: canon[i].D,
			IP: clean(m.IP, maxAuditText), UserAgent: clean(m.UserAgent, maxAuditUserAgent),
			RequestID: clean(m.RequestID, maxAuditText), Context: clean(m.Context, maxAuditText),
			SourceID: clean(m.Source, maxAuditText), PrevHash: last}
		if m.Target != nil {
			r.TargetType, r.TargetID = clean(m.Target.Object, maxAuditText), clean(m.Target.ID, maxAuditText)
		}
		r.Hash = chainHash(last, r)
		var source *string
		if r.SourceID != "" {
			source = &r.SourceID
		}
		tag, err := tx.Exec(ctx, `INSERT INTO audit_log (id, at, actor, action, target_type, target_id, details,
				ip, user_agent, request_id, context, source_id, prev_hash, hash)
			VALUES ($1, $2, $3::jsonb, $4, $5, $6, $7::jsonb, $8, $9, $10, $11, $12, $13, $14)
			ON CONFLICT (context, source_id) DO NOTHING`,
			r.ID, r.At, r.Actor, r.Action, r.TargetType, r.TargetID, r.Details, r.IP, r.UserAgent, r.RequestID,
			r.Context, source, r.PrevHash, r.Hash)
		if err != nil {
			return n, fmt.Errorf("append audit entry: %w", err)
		}
		if tag.RowsAffected() == 0 {
			continue // delivered before
		}
		lastID, last = r.ID, r.Hash
		n++
	}
	if n > 0 {
		if _, err := tx.Exec(ctx, `UPDATE audit_head SET last_id = $1, last_hash = $2`, lastID, last); err != nil {
			return n, fmt.Errorf("audit head: %w", err)
		}
	}
	return n, nil
}

// AppendAudit appends the other contexts' entries (the crm:audit stream)
// in one transaction, each once.
func (s *Store) AppendAudit(ctx context.Context, msgs []identityapi.AuditMessage) (int, error) {
	n := 0
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		n, err = appendAudit(ctx, tx, msgs...)
		return err
	})
	return n, err
}

// LoginFailed records a refused login: the account tried (nil for an
// unknown email), the email as given, and why.
func (s *Store) LoginFailed(ctx context.Context, f identity.FailedLogin) error {
	m := own(ctx, identityapi.AuditLoginFailed, "", 0, map[string]string{
		"email": clean(f.Email, maxAuditText), "reason": f.Reason})
	m.Actor = identityapi.AuditActor{Type: identityapi.AuditActorAnonymous}
	if f.UserID != nil {
		m.Target = &identityapi.AuditTarget{Object: "user", ID: strconv.FormatInt(*f.UserID, 10)}
	}
	_, err := s.AppendAudit(ctx, []identityapi.AuditMessage{m})
	if err != nil {
		return fmt.Errorf("record failed login: %w", err)
	}
	return nil
}

const auditCols = `id, at, actor::text, action, target_type, target_id, details::text, ip, user_agent, request_id,
	context, coalesce(source_id, ''), prev_hash, hash`

func scanAuditRow(row pgx.CollectableRow) (auditRow, error) {
	var r auditRow
	err := row.Scan(&r.ID, &r.At, &r.Actor, &r.Action, &r.TargetType, &r.TargetID, &r.Details, &r.IP, &r.UserAgent,
		&r.RequestID, &r.Context, &r.SourceID, &r.PrevHash, &r.Hash)
	return r, err
}

// AuditEntries returns the entries f selects, newest first, at most
// f.PerPage + 1 (the caller tells a further page by the extra one).
func (s *Store) AuditEntries(ctx context.Context, f identity.AuditFilter) ([]identityapi.AuditEntry, error) {
	var w listsql.Where
	if f.Actor != nil {
		w.And("actor->>'id' = " + w.Arg(strconv.FormatInt(*f.Actor, 10)))
	}
	if f.Action != "" {
		w.And("action = " + w.Arg(f.Action))
	}
	if f.From != nil {
		w.And("at >= " + w.Arg(*f.From))
	}
	if f.To != nil {
		w.And("at < " + w.Arg(*f.To))
	}
	if f.After != nil {
		w.And("id < " + w.Arg(*f.After))
	}
	rows, err := s.db.Query(ctx, `SELECT `+auditCols+` FROM audit_log `+w.SQL()+` ORDER BY id DESC LIMIT `+w.Arg(f.PerPage+1),
		w.Args()...)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	rs, err := pgx.CollectRows(rows, scanAuditRow)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	out := make([]identityapi.AuditEntry, len(rs))
	for i, r := range rs {
		e := identityapi.AuditEntry{ID: r.ID, Action: r.Action, Details: json.RawMessage(r.Details), IP: r.IP,
			UserAgent: r.UserAgent, RequestID: r.RequestID, Context: r.Context,
			PrevHash: hex.EncodeToString(r.PrevHash), Hash: hex.EncodeToString(r.Hash)}
		e.At.Time = r.At.UTC()
		if err := json.Unmarshal([]byte(r.Actor), &e.Actor); err != nil {
			return nil, fmt.Errorf("audit entry %d actor: %w", r.ID, err)
		}
		if r.TargetType != "" || r.TargetID != "" {
			e.Target = &identityapi.AuditTarget{Object: r.TargetType, ID: r.TargetID}
		}
		out[i] = e
	}
	return out, nil
}

// VerifyAudit walks the whole chain in one snapshot, oldest first, and
// names the first entry that breaks it: an id not following the previous
// one (entries missing), a prev_hash that is not the previous hash (link),
// a hash that is not that of the entry's fields (hash); then the head,
// which a missing tail leaves ahead of the last entry.
func (s *Store) VerifyAudit(ctx context.Context) (identityapi.AuditVerification, error) {
	var v identityapi.AuditVerification
	tx, err := s.db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return v, fmt.Errorf("verify audit log: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.Query(ctx, `SELECT `+auditCols+` FROM audit_log ORDER BY id`)
	if err != nil {
		return v, fmt.Errorf("verify audit log: %w", err)
	}
	var lastID int64
	last := make([]byte, sha256.Size)
	broken := func(id int64, reason string) {
		v.FirstBroken, v.Reason = &id, reason
	}
	for rows.Next() {
		r, err := scanAuditRow(rows)
		if err != nil {
			rows.Close()
			return v, fmt.Errorf("verify audit log: %w", err)
		}
		v.Checked++
		switch {
		case r.ID != lastID+1:
			broken(r.ID, "missing")
		case !bytes.Equal(r.PrevHash, last):
			broken(r.ID, "link")
		case !bytes.Equal(r.Hash, chainHash(r.PrevHash, r)):
			broken(r.ID, "hash")
		}
		if v.FirstBroken != nil {
			rows.Close()
			return v, nil
		}
		lastID, last = r.ID, r.Hash
	}
	if err := rows.Err(); err != nil {
		return v, fmt.Errorf("verify audit log: %w", err)
	}
	var headID int64
	var head []byte
	if err := tx.QueryRow(ctx, `SELECT last_id, last_hash FROM audit_head`).Scan(&headID, &head); err != nil {
		return v, fmt.Errorf("verify audit log: %w", err)
	}
	if headID != lastID || !bytes.Equal(head, last) {
		broken(lastID+1, "missing")
		return v, nil
	}
	v.OK = true
	return v, nil
}
