package store

import (
	"context"

	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// ExportContacts streams the matching contacts in list order (a merge of
// the per-status index scans, so PostgreSQL streams too instead of sorting
// the whole result first). pgx reads
// rows off the wire as they are scanned, so memory stays constant however
// many rows match.
func (s *Store) ExportContacts(ctx context.Context, f contacts.Filter, each func(contacts.Contact) error) error {
	w := filter(f)
	rows, err := s.db.Query(ctx, ordered(f, w, contactCols, false), s.planned(w.Args())...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		c, err := scanContact(rows)
		if err != nil {
			return err
		}
		if err := each(c); err != nil {
			return err
		}
	}
	return rows.Err()
}
