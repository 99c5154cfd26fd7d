package store

import (
	"context"
	"fmt"

	"github.com/opencrm/crm/services/leads/internal/leads"
)

// Each streams every lead matching f in the list's order, for the CSV
// export: rows are read as they arrive, never collected.
func (s *Store) Each(ctx context.Context, f leads.Filter, fn func(leads.Lead) error) error {
	w := Where(f)
	rows, err := s.db.Query(ctx, `SELECT `+Columns+` FROM leads `+w.SQL()+` `+orderBy(f), w.Args()...)
	if err != nil {
		return fmt.Errorf("export leads: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		l, err := Scan(rows)
		if err != nil {
			return fmt.Errorf("export leads: %w", err)
		}
		if err := fn(l); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export leads: %w", err)
	}
	return nil
}
