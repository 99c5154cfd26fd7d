package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

// BeginQualification takes a lease on the lead's saga row.
func (s *Store) BeginQualification(ctx context.Context, leadID int64, lease time.Duration) (leads.Saga, error) {
	var raw []byte
	err := s.db.QueryRow(ctx, `INSERT INTO qualifications (lead_id, attempts, locked_until)
		VALUES ($1, 1, now() + make_interval(secs => $2))
		ON CONFLICT (lead_id) DO UPDATE SET attempts = qualifications.attempts + 1,
			locked_until = EXCLUDED.locked_until, updated_at = now()
		WHERE qualifications.locked_until IS NULL OR qualifications.locked_until < now()
		RETURNING state`, leadID, lease.Seconds()).Scan(&raw)
	if db.IsNoRows(err) {
		return leads.Saga{}, fault.Conflict("qualification_in_progress",
			"another qualification of this lead is in progress; retry shortly")
	}
	if db.IsForeignKeyViolation(err, "") {
		return leads.Saga{}, fault.NotFound("lead")
	}
	if err != nil {
		return leads.Saga{}, fmt.Errorf("begin qualification: %w", err)
	}
	var saga leads.Saga
	if err := json.Unmarshal(raw, &saga); err != nil {
		return leads.Saga{}, fmt.Errorf("begin qualification: decode state: %w", err)
	}
	return saga, nil
}

// SaveQualification stores the saga's progress.
func (s *Store) SaveQualification(ctx context.Context, leadID int64, saga leads.Saga) error {
	raw, err := json.Marshal(saga)
	if err != nil {
		return err
	}
	if _, err := s.db.Exec(ctx, `UPDATE qualifications SET state = $2, updated_at = now() WHERE lead_id = $1`,
		leadID, raw); err != nil {
		return fmt.Errorf("save qualification: %w", err)
	}
	return nil
}

// ReleaseQualification saves an unfinished attempt's progress and ends
// its lease.
func (s *Store) ReleaseQualification(ctx context.Context, leadID int64, saga leads.Saga) error {
	raw, err := json.Marshal(saga)
	if err != nil {
		return err
	}
	_, err = s.db.Exec(ctx, `UPDATE qualifications SET state = $2, locked_until = NULL, updated_at = now()
		WHERE lead_id = $1`, leadID, raw)
	return err
}

// FinishQualification marks the lead qualified with the saga's ids and
// publishes lead.qualified, in one transaction.
func (s *Store) FinishQualification(ctx context.Context, leadID int64, saga leads.Saga) (leads.Lead, error) {
	raw, err := json.Marshal(saga)
	if err != nil {
		return leads.Lead{}, err
	}
	var out leads.Lead
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		cur, err := get(ctx, tx, leadID, "FOR UPDATE")
		if err != nil {
			return err
		}
		if cur.Status == leads.StatusQualified {
			return leads.AlreadyQualified(cur)
		}
		if out, err = one(ctx, tx, "qualify lead", `UPDATE leads SET status = 'qualified', contact_id = $2, company_id = $3,
			deal_id = $4, qualified_at = now(), updated_at = now() WHERE id = $1 RETURNING `+Columns,
			leadID, saga.Contact.ID, saga.Company.ID, saga.Deal.ID); err != nil {
			return err
		}
		if out, err = rendered(ctx, tx, out); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE qualifications SET state = $2, completed_at = now(), locked_until = NULL,
			updated_at = now() WHERE lead_id = $1`, leadID, raw); err != nil {
			return fmt.Errorf("qualify lead: %w", err)
		}
		return event(ctx, tx, leads.EventQualified, out)
	})
	return out, err
}
