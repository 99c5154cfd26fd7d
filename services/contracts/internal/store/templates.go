package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/audit"
	"github.com/opencrm/crm/pkg/contract/contractsapi"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

const templateColumns = `t.id, t.name, t.content, t.number_prefix, t.default_term_months,
	t.header_left, t.header_center, t.header_right, t.footer_left, t.footer_center, t.footer_right,
	(SELECT count(*) FROM contracts c WHERE c.template_id = t.id), t.created_by, t.created_at, t.updated_at`

func scanTemplate(row pgx.CollectableRow) (contracts.Template, error) {
	var t contracts.Template
	err := row.Scan(&t.ID, &t.Name, &t.Content, &t.NumberPrefix, &t.DefaultTermMonths,
		&t.HeaderLeft, &t.HeaderCenter, &t.HeaderRight, &t.FooterLeft, &t.FooterCenter, &t.FooterRight,
		&t.ContractsCount, &t.CreatedBy, &t.CreatedAt.Time, &t.UpdatedAt.Time)
	return t, err
}

// ListTemplates returns every template by name.
func (s *Store) ListTemplates(ctx context.Context) ([]contracts.Template, error) {
	rows, err := s.db.Query(ctx, `SELECT `+templateColumns+` FROM templates t ORDER BY lower(t.name), t.id`)
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanTemplate)
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	if out == nil {
		out = []contracts.Template{}
	}
	return out, nil
}

// GetTemplate returns one template or a not_found fault.
func (s *Store) GetTemplate(ctx context.Context, id int64) (contracts.Template, error) {
	return s.getTemplate(ctx, s.db, id)
}

func (s *Store) getTemplate(ctx context.Context, q db.Querier, id int64) (contracts.Template, error) {
	return one(ctx, q, scanTemplate, "template", `SELECT `+templateColumns+` FROM templates t WHERE t.id = $1`, id)
}

// CreateTemplate inserts t and records template.created (its name) in
// the audit log, in the same transaction.
func (s *Store) CreateTemplate(ctx context.Context, t contracts.Template) (contracts.Template, error) {
	var out contracts.Template
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO templates (name, content, number_prefix, default_term_months,
			header_left, header_center, header_right, footer_left, footer_center, footer_right, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`,
			t.Name, t.Content, t.NumberPrefix, t.DefaultTermMonths, t.HeaderLeft, t.HeaderCenter, t.HeaderRight,
			t.FooterLeft, t.FooterCenter, t.FooterRight, t.CreatedBy).Scan(&id)
		if err != nil {
			return fmt.Errorf("create template: %w", err)
		}
		if out, err = s.getTemplate(ctx, tx, id); err != nil {
			return err
		}
		return auditTemplate(ctx, tx, identityapi.AuditTemplateCreated, out.ID, map[string]any{"name": out.Name})
	})
	return out, err
}

// UpdateTemplate saves t and, when a field changed, records
// template.updated (its name and the names of the fields changed, without
// their values) in the audit log, in the same transaction. The row is
// locked and read first, so the fields are those this write changed.
func (s *Store) UpdateTemplate(ctx context.Context, t contracts.Template) (contracts.Template, error) {
	var out contracts.Template
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var old contracts.Template
		err := tx.QueryRow(ctx, `SELECT name, content, number_prefix, default_term_months, header_left, header_center,
			header_right, footer_left, footer_center, footer_right FROM templates WHERE id = $1 FOR UPDATE`, t.ID).Scan(
			&old.Name, &old.Content, &old.NumberPrefix, &old.DefaultTermMonths, &old.HeaderLeft, &old.HeaderCenter,
			&old.HeaderRight, &old.FooterLeft, &old.FooterCenter, &old.FooterRight)
		if db.IsNoRows(err) {
			return fault.NotFound("template")
		}
		if err != nil {
			return fmt.Errorf("update template: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE templates SET name = $2, content = $3, number_prefix = $4,
			default_term_months = $5, header_left = $6, header_center = $7, header_right = $8,
			footer_left = $9, footer_center = $10, footer_right = $11, updated_at = now() WHERE id = $1`,
			t.ID, t.Name, t.Content, t.NumberPrefix, t.DefaultTermMonths, t.HeaderLeft, t.HeaderCenter, t.HeaderRight,
			t.FooterLeft, t.FooterCenter, t.FooterRight); err != nil {
			return fmt.Errorf("update template: %w", err)
		}
		if out, err = s.getTemplate(ctx, tx, t.ID); err != nil {
			return err
		}
		changes := templateChanges(old, out)
		if len(changes) == 0 {
			return nil
		}
		return auditTemplate(ctx, tx, identityapi.AuditTemplateUpdated, out.ID, map[string]any{"name": out.Name, "changes": changes})
	})
	return out, err
}

// DeleteTemplate removes an unused template and records template.deleted
// (its name) in the audit log, in the same transaction. The foreign key
// is the guarantee; the explicit check only gives the common case a clear
// answer.
func (s *Store) DeleteTemplate(ctx context.Context, id int64) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		var name string
		err := tx.QueryRow(ctx, `DELETE FROM templates WHERE id = $1 RETURNING name`, id).Scan(&name)
		if db.IsForeignKeyViolation(err, "") {
			return contracts.ErrTemplateInUse()
		}
		if db.IsNoRows(err) {
			return fault.NotFound("template")
		}
		if err != nil {
			return fmt.Errorf("delete template: %w", err)
		}
		return auditTemplate(ctx, tx, identityapi.AuditTemplateDeleted, id, map[string]any{"name": name})
	})
}

// templateChange names a field an update changed; its values are left
// out (a template's content is large), as identity lists a password
// change.
type templateChange struct {
	Field string `json:"field"`
}

// templateChanges are the editable fields old and t differ in, in the
// body's order.
func templateChanges(old, t contracts.Template) []templateChange {
	var out []templateChange
	for _, f := range []struct {
		name string
		same bool
	}{
		{"name", old.Name == t.Name},
		{"content", old.Content == t.Content},
		{"number_prefix", old.NumberPrefix == t.NumberPrefix},
		{"default_term_months", old.DefaultTermMonths == t.DefaultTermMonths},
		{"header_left", old.HeaderLeft == t.HeaderLeft},
		{"header_center", old.HeaderCenter == t.HeaderCenter},
		{"header_right", old.HeaderRight == t.HeaderRight},
		{"footer_left", old.FooterLeft == t.FooterLeft},
		{"footer_center", old.FooterCenter == t.FooterCenter},
		{"footer_right", old.FooterRight == t.FooterRight},
	} {
		if !f.same {
			out = append(out, templateChange{Field: f.name})
		}
	}
	return out
}

// auditTemplate records a template's audit entry with tx.
func auditTemplate(ctx context.Context, tx pgx.Tx, action string, id int64, details map[string]any) error {
	return audit.Record(ctx, tx, contractsapi.Service, audit.Entry{Action: action, Object: "template",
		ID: strconv.FormatInt(id, 10), Details: details})
}
