package store

import (
	"context"
	"fmt"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
)

// Owner returns a lead's assignee and creator.
func (s *Store) Owner(ctx context.Context, id int64) (directory.Owner, error) {
	var o directory.Owner
	err := s.db.QueryRow(ctx, `SELECT assigned_to, created_by FROM leads WHERE id = $1`, id).Scan(&o.AssignedTo, &o.CreatedBy)
	if db.IsNoRows(err) {
		return o, fault.NotFound("lead")
	}
	return o, err
}

// CanWrite decides write access with this schema's user directory.
func (s *Store) CanWrite(ctx context.Context, o directory.Owner) error {
	return directory.CheckWrite(ctx, s.db, o)
}

// UserExists consults the directory read model, and identity on a miss.
func (s *Store) UserExists(ctx context.Context, id int64) (bool, error) {
	ok, err := s.users.Exists(ctx, id)
	if err != nil {
		return false, fmt.Errorf("user exists: %w", err)
	}
	return ok, nil
}
