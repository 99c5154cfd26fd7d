package store

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

var _ identity.PrivacyStore = (*Store)(nil)

// The audit targets of privacy requests.
const (
	targetExport  = "privacy_export"
	targetErasure = "privacy_erasure"
)

// privacyTable is the table of a kind of request: one of two constants,
// never input.
func privacyTable(kind string) (string, error) {
	switch kind {
	case identity.KindExport:
		return "privacy_exports", nil
	case identity.KindErasure:
		return "privacy_erasures", nil
	}
	return "", fmt.Errorf("privacy: unknown request kind %q", kind)
}

// privacyCols are a request's columns in scanPrivacy's order; an export
// has no reason, an erasure no document.
func privacyCols(kind string) string {
	reason, document := "reason", "NULL::jsonb"
	if kind == identity.KindExport {
		reason, document = "''", "document"
	}
	return `id, coalesce(email, ''), ` + reason + `, status, phase, parts, requested_by, ` + document +
		`, requested_at, completed_at, attempts`
}

func scanPrivacy(kind string) pgx.RowToFunc[identity.PrivacyJob] {
	return func(row pgx.CollectableRow) (identity.PrivacyJob, error) {
		j := identity.PrivacyJob{Kind: kind}
		var parts, actor []byte
		if err := row.Scan(&j.ID, &j.Email, &j.Reason, &j.Status, &j.Phase, &parts, &actor, &j.Document,
			&j.RequestedAt, &j.CompletedAt, &j.Attempts); err != nil {
			return j, err
		}
		if err := json.Unmarshal(parts, &j.Parts); err != nil {
			return j, fmt.Errorf("privacy %s %d parts: %w", kind, j.ID, err)
		}
		if err := json.Unmarshal(actor, &j.Actor); err != nil {
			return j, fmt.Errorf("privacy %s %d actor: %w", kind, j.ID, err)
		}
		return j, nil
	}
}

// CreatePrivacy stores a request and its audit entry (the address only as
// its keyed hash). Two erasures of one person at once make one: the
// unique index lets one insert win; the other reads the winner's row.
func (s *Store) CreatePrivacy(ctx context.Context, r identity.PrivacyRequest) (identity.PrivacyJob, bool, error) {
	actor, err := json.Marshal(r.Actor)
	if err != nil {
		return identity.PrivacyJob{}, false, err
	}
	details := map[string]string{"email_hash": hex.EncodeToString(r.Hash)}
	var j identity.PrivacyJob
	created := false
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		switch r.Kind {
		case identity.KindExport:
			var erasing bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM privacy_erasures
					WHERE email_hash = $1 AND status <> 'completed')`, r.Hash).Scan(&erasing); err != nil {
				return fmt.Errorf("privacy export: %w", err)
			}
			if erasing {
				return identity.ErrErasureRunning
			}
			rows, err := tx.Query(ctx, `INSERT INTO privacy_exports (email_hash, email, requested_by)
				VALUES ($1, $2, $3::jsonb) RETURNING `+privacyCols(identity.KindExport), r.Hash, r.Email, actor)
			if err != nil {
				return fmt.Errorf("privacy export: %w", err)
			}
			if j, err = pgx.CollectExactlyOneRow(rows, scanPrivacy(identity.KindExport)); err != nil {
				return fmt.Errorf("privacy export: %w", err)
			}
			created = true
			_, err = appendAudit(ctx, tx, own(ctx, identityapi.AuditPersonExportRequested, targetExport, j.ID, details))
			return err
		case identity.KindErasure:
			rows, err := tx.Query(ctx, `INSERT INTO privacy_erasures (email_hash, email, reason, requested_by)
				VALUES ($1, $2, $3, $4::jsonb) ON CONFLICT (email_hash) DO NOTHING
				RETURNING `+privacyCols(identity.KindErasure), r.Hash, r.Email, r.Reason, actor)
			if err != nil {
				return fmt.Errorf("privacy erasure: %w", err)
			}
			j, err = pgx.CollectExactlyOneRow(rows, scanPrivacy(identity.KindErasure))
			switch {
			case db.IsNoRows(err):
				// The person's erasure exists (committed: the insert waited
				// for a concurrent one to end): answer it.
				rows, err := tx.Query(ctx, `SELECT `+privacyCols(identity.KindErasure)+
					` FROM privacy_erasures WHERE email_hash = $1`, r.Hash)
				if err != nil {
					return fmt.Errorf("privacy erasure: %w", err)
				}
				if j, err = pgx.CollectExactlyOneRow(rows, scanPrivacy(identity.KindErasure)); err != nil {
					return fmt.Errorf("privacy erasure: %w", err)
				}
				return nil
			case err != nil:
				return fmt.Errorf("privacy erasure: %w", err)
			}
			created = true
			_, err = appendAudit(ctx, tx, own(ctx, identityapi.AuditPersonErasureRequested, targetErasure, j.ID, details))
			return err
		}
		return fmt.Errorf("privacy: unknown request kind %q", r.Kind)
	})
	if err != nil {
		return identity.PrivacyJob{}, false, err
	}
	return j, created, nil
}

// PrivacyJob returns one request.
func (s *Store) PrivacyJob(ctx context.Context, kind string, id int64) (identity.PrivacyJob, error) {
	table, err := privacyTable(kind)
	if err != nil {
		return identity.PrivacyJob{}, err
	}
	rows, err := s.db.Query(ctx, `SELECT `+privacyCols(kind)+` FROM `+table+` WHERE id = $1`, id)
	if err != nil {
		return identity.PrivacyJob{}, fmt.Errorf("privacy %s: %w", kind, err)
	}
	j, err := pgx.CollectExactlyOneRow(rows, scanPrivacy(kind))
	switch {
	case db.IsNoRows(err) && kind == identity.KindExport:
		return j, identity.ErrExportNotFound
	case db.IsNoRows(err):
		return j, identity.ErrErasureNotFound
	case err != nil:
		return j, fmt.Errorf("privacy %s: %w", kind, err)
	}
	return j, nil
}

// millis is d as the whole milliseconds the statements add to now().
func millis(d time.Duration) int64 { return d.Milliseconds() }

// ClaimPrivacy leases the due requests, erasures first: rows another
// replica holds are skipped, and the lease (next_attempt_at moved ahead)
// keeps the others off them once this transaction commits.
func (s *Store) ClaimPrivacy(ctx context.Context, lease time.Duration, limit int) ([]identity.PrivacyJob, error) {
	var out []identity.PrivacyJob
	for _, kind := range []string{identity.KindErasure, identity.KindExport} {
		if len(out) >= limit {
			break
		}
		table, _ := privacyTable(kind)
		rows, err := s.db.Query(ctx, `UPDATE `+table+` t SET status = 'running',
				next_attempt_at = now() + $2 * interval '1 millisecond'
			FROM (SELECT id FROM `+table+` WHERE status <> 'completed' AND next_attempt_at <= now()
				ORDER BY next_attempt_at, id LIMIT $1 FOR UPDATE SKIP LOCKED) due
			WHERE t.id = due.id RETURNING `+qualified(privacyCols(kind)), limit-len(out), millis(lease))
		if err != nil {
			return nil, fmt.Errorf("claim privacy %s: %w", kind, err)
		}
		jobs, err := pgx.CollectRows(rows, scanPrivacy(kind))
		if err != nil {
			return nil, fmt.Errorf("claim privacy %s: %w", kind, err)
		}
		out = append(out, jobs...)
	}
	return out, nil
}

// qualified makes cols' first column, id, the updated table's (alias t):
// in an UPDATE ... FROM's RETURNING a bare id is ambiguous.
func qualified(cols string) string { return "t." + cols }

// SavePrivacyPart stores one context's answer and renews the lease.
func (s *Store) SavePrivacyPart(ctx context.Context, kind string, id int64, context string, part json.RawMessage, lease time.Duration) error {
	table, err := privacyTable(kind)
	if err != nil {
		return err
	}
	tag, err := s.db.Exec(ctx, `UPDATE `+table+` SET parts = parts || jsonb_build_object($2::text, $3::jsonb),
			next_attempt_at = now() + $4 * interval '1 millisecond'
		WHERE id = $1 AND status <> 'completed'`, id, context, string(part), millis(lease))
	if err != nil {
		return fmt.Errorf("privacy %s %d part of %s: %w", kind, id, context, err)
	}
	if tag.RowsAffected() == 0 {
		return identity.ErrPrivacyGone
	}
	return nil
}

// AdvancePrivacy moves a request to phase.
func (s *Store) AdvancePrivacy(ctx context.Context, kind string, id int64, phase int, lease time.Duration) error {
	table, err := privacyTable(kind)
	if err != nil {
		return err
	}
	tag, err := s.db.Exec(ctx, `UPDATE `+table+` SET phase = $2, attempts = 0, last_error = '',
			next_attempt_at = now() + $3 * interval '1 millisecond'
		WHERE id = $1 AND status <> 'completed'`, id, phase, millis(lease))
	if err != nil {
		return fmt.Errorf("privacy %s %d phase: %w", kind, id, err)
	}
	if tag.RowsAffected() == 0 {
		return identity.ErrPrivacyGone
	}
	return nil
}

// DelayPrivacy counts a failed attempt and makes the request due after
// delay.
func (s *Store) DelayPrivacy(ctx context.Context, kind string, id int64, delay time.Duration, reason string) error {
	table, err := privacyTable(kind)
	if err != nil {
		return err
	}
	_, err = s.db.Exec(ctx, `UPDATE `+table+` SET attempts = attempts + 1, last_error = $2,
			next_attempt_at = now() + $3 * interval '1 millisecond'
		WHERE id = $1 AND status <> 'completed'`, id, clean(reason, 1000), millis(delay))
	if err != nil {
		return fmt.Errorf("privacy %s %d delay: %w", kind, id, err)
	}
	return nil
}

// CompleteExport stores the document, forgets the address and the
// answers it was built from. An export an erasure of the person overtook
// (the erasure not completed, or completed after the export was asked
// for) is deleted instead: it read what the erasure removes.
func (s *Store) CompleteExport(ctx context.Context, id int64, doc privacyapi.Document) error {
	raw, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	gone := false
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		var hash []byte
		var requested time.Time
		err := tx.QueryRow(ctx, `SELECT email_hash, requested_at FROM privacy_exports
			WHERE id = $1 AND status <> 'completed' FOR UPDATE`, id).Scan(&hash, &requested)
		if db.IsNoRows(err) {
			gone = true
			return nil
		}
		if err != nil {
			return err
		}
		var overtaken bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM privacy_erasures WHERE email_hash = $1
				AND (completed_at IS NULL OR completed_at >= $2))`, hash, requested).Scan(&overtaken); err != nil {
			return err
		}
		if overtaken {
			gone = true
			_, err := tx.Exec(ctx, `DELETE FROM privacy_exports WHERE id = $1`, id)
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE privacy_exports SET status = 'completed', email = NULL, parts = '{}',
			document = $2::jsonb, completed_at = now(), last_error = '' WHERE id = $1`, id, string(raw))
		return err
	})
	if err != nil {
		return fmt.Errorf("complete privacy export %d: %w", id, err)
	}
	if gone {
		return identity.ErrPrivacyGone
	}
	return nil
}

// PurgeExports deletes the exports completed more than age ago.
func (s *Store) PurgeExports(ctx context.Context, age time.Duration) (int64, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM privacy_exports
		WHERE status = 'completed' AND completed_at < now() - $1 * interval '1 millisecond'`, millis(age))
	if err != nil {
		return 0, fmt.Errorf("purge privacy exports: %w", err)
	}
	return tag.RowsAffected(), nil
}

// ErasedDetails are person.erased's details: the counts per context, the
// exports deleted and the address's keyed hash (never the address).
type ErasedDetails struct {
	Counts         map[string]identity.ReceiptCounts `json:"counts"`
	ExportsDeleted int64                             `json:"exports_deleted"`
	EmailHash      string                            `json:"email_hash"`
}

// CompleteErasure ends an erasure: completed, its address forgotten, the
// person's exports deleted, privacy.erased published and person.erased
// appended, in one transaction. An erasure completed already (by another
// runner whose lease ran out) is ErrPrivacyGone.
func (s *Store) CompleteErasure(ctx context.Context, id int64, ev identity.ErasedEvent) error {
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var hash []byte
		err := tx.QueryRow(ctx, `UPDATE privacy_erasures SET status = 'completed', email = NULL, completed_at = now(),
				last_error = '' WHERE id = $1 AND status <> 'completed' RETURNING email_hash`, id).Scan(&hash)
		if db.IsNoRows(err) {
			return identity.ErrPrivacyGone
		}
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM privacy_exports WHERE email_hash = $1`, hash)
		if err != nil {
			return err
		}
		if err := outbox.Add(ctx, tx, directory.Stream, identity.EventErased, strconv.FormatInt(id, 10), ev); err != nil {
			return err
		}
		_, err = appendAudit(ctx, tx, own(ctx, identityapi.AuditPersonErased, targetErasure, id, ErasedDetails{
			Counts: ev.Counts, ExportsDeleted: tag.RowsAffected(), EmailHash: hex.EncodeToString(hash)}))
		return err
	})
	if err != nil && !errors.Is(err, identity.ErrPrivacyGone) {
		return fmt.Errorf("complete privacy erasure %d: %w", id, err)
	}
	return err
}
