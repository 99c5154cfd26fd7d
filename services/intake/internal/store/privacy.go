package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/timestamp"
)

// Privacy is intake's part of a person's privacy requests (pkg/privacy's
// Part): the submissions whose submitted address is the person's
// (compared case-insensitively) or that were forwarded as one of the
// person's leads. An export lists them as stored; an erasure deletes
// them, with the Idempotency-Key records that name them (their receipts
// hold the submission's or its lead's id, and their hash the request
// body). A submission still waiting for leads is deleted too: it will
// not become a lead.
type Privacy struct {
	db *db.DB
}

// NewPrivacy returns intake's privacy part on d.
func NewPrivacy(d *db.DB) (*Privacy, error) {
	if d == nil {
		return nil, errors.New("store: privacy needs a database")
	}
	return &Privacy{db: d}, nil
}

// SubmissionPayload is what a submission stored of its request.
type SubmissionPayload struct {
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Email     string `json:"email"`
	Phone     string `json:"phone"`
	Company   string `json:"company"`
	JobTitle  string `json:"job_title"`
	Source    string `json:"source"`
	Notes     string `json:"notes"`
	Origin    string `json:"origin"`
}

// SubmissionExport is a submission as a person's export lists it.
type SubmissionExport struct {
	ID         int64             `json:"id"`
	ReceivedAt timestamp.Time    `json:"received_at"`
	Payload    SubmissionPayload `json:"payload"`
	Status     string            `json:"status"`
	LeadID     *int64            `json:"lead_id"`
}

// subjectWhere selects the subject's submissions: $1 the address, $2
// their lead ids (submissions_email_lower and submissions_lead serve it).
const subjectWhere = `WHERE lower(email) = lower($1) OR lead_id = ANY($2)`

// Export lists the subject's submissions ({"submissions":[...]}).
func (p *Privacy) Export(ctx context.Context, s privacyapi.Subject) (privacyapi.ExportPart, error) {
	var part privacyapi.ExportPart
	rows, err := p.db.Query(ctx, `SELECT id, created_at, first_name, last_name, email, phone, company, job_title,
			source, notes, origin, status, lead_id
		FROM submissions `+subjectWhere+` ORDER BY id`, s.Email, leadIDs(s))
	if err != nil {
		return part, fmt.Errorf("privacy: export submissions: %w", err)
	}
	subs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SubmissionExport, error) {
		var e SubmissionExport
		p := &e.Payload
		err := row.Scan(&e.ID, &e.ReceivedAt.Time, &p.FirstName, &p.LastName, &p.Email, &p.Phone, &p.Company,
			&p.JobTitle, &p.Source, &p.Notes, &p.Origin, &e.Status, &e.LeadID)
		return e, err
	})
	if err != nil {
		return part, fmt.Errorf("privacy: export submissions: %w", err)
	}
	if subs == nil {
		subs = []SubmissionExport{}
	}
	part.Data, err = json.Marshal(map[string][]SubmissionExport{"submissions": subs})
	if err != nil {
		return part, fmt.Errorf("privacy: export submissions: %w", err)
	}
	return part, nil
}

// Erase deletes the subject's submissions in tx (Erased
// {"submissions": n}) and the Idempotency-Key records that name them or
// the person's leads. The submissions are locked first, so a retry
// claiming one waits and then finds it gone, and a finishing delivery
// updates nothing.
func (p *Privacy) Erase(ctx context.Context, tx pgx.Tx, s privacyapi.Subject) (privacyapi.ErasePart, error) {
	part := privacyapi.ErasePart{Receipt: privacyapi.Receipt{Erased: map[string]int64{"submissions": 0}}}
	leads := leadIDs(s)
	rows, err := tx.Query(ctx, `SELECT id FROM submissions `+subjectWhere+` ORDER BY id FOR UPDATE`, s.Email, leads)
	if err != nil {
		return part, fmt.Errorf("privacy: lock submissions: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return part, fmt.Errorf("privacy: lock submissions: %w", err)
	}
	// Before the submissions: their foreign key would unlink the records
	// (ON DELETE SET NULL) rather than find them afterwards.
	if _, err := tx.Exec(ctx, `DELETE FROM idempotency_requests
		WHERE submission_id = ANY($1) OR receipt_queued_id = ANY($1) OR receipt_lead_id = ANY($2)`, ids, leads); err != nil {
		return part, fmt.Errorf("privacy: delete idempotency records: %w", err)
	}
	tag, err := tx.Exec(ctx, `DELETE FROM submissions WHERE id = ANY($1)`, ids)
	if err != nil {
		return part, fmt.Errorf("privacy: delete submissions: %w", err)
	}
	part.Receipt.Erased["submissions"] = tag.RowsAffected()
	return part, nil
}

// leadIDs is the subject's lead ids as a parameter: never a NULL array.
func leadIDs(s privacyapi.Subject) []int64 {
	if s.LeadIDs == nil {
		return []int64{}
	}
	return s.LeadIDs
}
