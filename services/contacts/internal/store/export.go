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
// order, the custom fields named by fields (validated definition names)
// rendered as cells. It is one ORDER BY over the filter, not the list's
// per-status merge (ordered): without a LIMIT neither streams from an
// index, and one sort lets PostgreSQL sort in parallel workers, where the
// merge sorted each status alone (2.9x a raw COPY through the gateway
// with the merge).
func exportSQL(f contacts.Filter, fields []string) (string, []any, error) {
	cells := []string{exportCols}
	for _, name := range fields {
		cell, err := csvx.CellSQL("custom_fields", name)
		if err != nil {
			return "", nil, err
		}
		cells = append(cells, cell)
	}
	cells = append(cells, csvx.TimeSQL("created_at"), csvx.TimeSQL("updated_at"))
	w := filter(f)
	expr, dir := sortKey(f)
	sql := `SELECT ` + strings.Join(cells, ", ") + ` FROM contacts ` + w.SQL() + ` ORDER BY ` + expr + ` ` + dir + `, id ` + dir
	return sql, w.Args(), nil
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
