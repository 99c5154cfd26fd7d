package store

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/opencrm/crm/pkg/csvx"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

// exportCols are the export's built-in cells after id, in its order (the
// import template's columns); the custom fields' cells, then created_at
// and updated_at follow.
const exportCols = `id, first_name, last_name, email, phone, company, job_title, source, status, notes, tags`

// exportSQL is the export's SELECT: the cells of the leads matching f in
// the list's order, the custom fields named by fields (validated
// definition names) rendered as cells.
func exportSQL(f leads.Filter, fields []string) (string, []any, error) {
	cells := []string{exportCols}
	for _, name := range fields {
		cell, err := csvx.CellSQL("custom_fields", name)
		if err != nil {
			return "", nil, err
		}
		cells = append(cells, cell)
	}
	cells = append(cells, csvx.TimeSQL("created_at"), csvx.TimeSQL("updated_at"))
	w := Where(f)
	return `SELECT ` + strings.Join(cells, ", ") + ` FROM leads ` + w.SQL() + ` ` + orderBy(f), w.Args(), nil
}

// Export writes the CSV rows (no header line) of every lead matching f,
// in the list's order, to dst: PostgreSQL writes them (COPY TO,
// csvx.Copy), so a row costs no decoding or formatting in Go and memory
// stays constant however many rows match.
func (s *Store) Export(ctx context.Context, f leads.Filter, fields []string, dst io.Writer) error {
	sql, args, err := exportSQL(f, fields)
	if err != nil {
		return fmt.Errorf("export leads: %w", err)
	}
	conn, err := s.db.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("export leads: %w", err)
	}
	defer conn.Release()
	if err := csvx.Copy(ctx, conn.Conn().PgConn(), dst, sql, args); err != nil {
		return fmt.Errorf("export leads: %w", err)
	}
	return nil
}
