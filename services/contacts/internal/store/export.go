package store

import (
	"context"
	"io"
	"strings"

	"github.com/opencrm/crm/pkg/csvx"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// exportCols are the columns the export reads, in its order: id, the
// import's built-in columns, then (after the custom fields' cells)
// created_at and updated_at.
const exportCols = `id, first_name, last_name, email, phone, mobile, job_title, company_name, address_street,
	address_city, address_state, address_zip, address_country, notes, tags, status, source`

// exportSQL is the export's SELECT: the cells of the rows of f in list
// order (ordered: a merge of the per-status index scans, so PostgreSQL
// streams instead of sorting the whole result first), the custom fields
// named by fields (validated definition names) rendered as cells.
func exportSQL(f contacts.Filter, fields []string) (string, []any, error) {
	w := filter(f)
	inner := exportCols + `, created_at, updated_at`
	cells := []string{exportCols}
	if len(fields) > 0 {
		inner += `, custom_fields`
		for _, name := range fields {
			cell, err := csvx.CellSQL("custom_fields", name)
			if err != nil {
				return "", nil, err
			}
			cells = append(cells, cell)
		}
	}
	cells = append(cells, csvx.TimeSQL("created_at"), csvx.TimeSQL("updated_at"))
	// The outer SELECT only formats: a subquery with ORDER BY is never
	// flattened, so its order is the scan's.
	sql := `SELECT ` + strings.Join(cells, ", ") + ` FROM (` + ordered(f, w, inner, false) + `) c`
	return sql, w.Args(), nil // after ordered, which adds the per-status arguments
}

// ExportContacts writes the CSV rows (no header line) of the contacts
// matching f, in list order, to dst: PostgreSQL writes them (COPY TO,
// csvx.Copy), so a row costs no decoding or formatting in Go and memory
// stays constant however many rows match.
func (s *Store) ExportContacts(ctx context.Context, f contacts.Filter, fields []string, dst io.Writer) error {
	sql, args, err := exportSQL(f, fields)
	if err != nil {
		return err
	}
	conn, err := s.db.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	return csvx.Copy(ctx, conn.Conn().PgConn(), dst, sql, args)
}
