package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

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

// CreateTemplate inserts t.
func (s *Store) CreateTemplate(ctx context.Context, t contracts.Template) (contracts.Template, error) {
	var id int64
	err := s.db.QueryRow(ctx, `INSERT INTO templates (name, content, number_prefix, default_term_months,
		header_left, header_center, header_right, footer_left, footer_center, footer_right, created_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`,
		t.Name, t.Content, t.NumberPrefix, t.DefaultTermMonths, t.HeaderLeft, t.HeaderCenter, t.HeaderRight,
		t.FooterLeft, t.FooterCenter, t.FooterRight, t.CreatedBy).Scan(&id)
	if err != nil {
		return contracts.Template{}, fmt.Errorf("create template: %w", err)
	}
	return s.GetTemplate(ctx, id)
}

// UpdateTemplate saves t.
func (s *Store) UpdateTemplate(ctx context.Context, t contracts.Template) (contracts.Template, error) {
	tag, err := s.db.Exec(ctx, `UPDATE templates SET name = $2, content = $3, number_prefix = $4,
		default_term_months = $5, header_left = $6, header_center = $7, header_right = $8,
		footer_left = $9, footer_center = $10, footer_right = $11, updated_at = now() WHERE id = $1`,
		t.ID, t.Name, t.Content, t.NumberPrefix, t.DefaultTermMonths, t.HeaderLeft, t.HeaderCenter, t.HeaderRight,
		t.FooterLeft, t.FooterCenter, t.FooterRight)
	if err != nil {
		return contracts.Template{}, fmt.Errorf("update template: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return contracts.Template{}, fault.NotFound("template")
	}
	return s.GetTemplate(ctx, t.ID)
}

// DeleteTemplate removes an unused template. The foreign key is the
// guarantee; the explicit check only gives the common case a clear answer.
func (s *Store) DeleteTemplate(ctx context.Context, id int64) error {
	tag, err := s.db.Exec(ctx, `DELETE FROM templates WHERE id = $1`, id)
	if db.IsForeignKeyViolation(err, "") {
		return contracts.ErrTemplateInUse()
	}
	if err != nil {
		return fmt.Errorf("delete template: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fault.NotFound("template")
	}
	return nil
}
