package store

import (
	"context"

	"github.com/opencrm/crm/pkg/db"
)

// LeadByEmail is the oldest lead whose email equals email ignoring case:
// one probe of the (lower(email), id) index.
func (s *Store) LeadByEmail(ctx context.Context, email string) (int64, bool, error) {
	var id int64
	err := s.db.QueryRow(ctx, `SELECT id FROM leads WHERE lower(email) = lower($1) ORDER BY lower(email), id LIMIT 1`, email).Scan(&id)
	if db.IsNoRows(err) {
		return 0, false, nil
	}
	return id, err == nil, err
}
