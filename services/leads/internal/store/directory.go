package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/outbox"
)

// RefreshAssigneeNames copies directory names onto leads whose stored
// assignee name differs (all users when userID is nil). It runs after the
// start-up sync and for every user event, so renames reach the sort column.
// The name is part of the lead as the API shows it, so the lead's
// updated_at moves too and an incremental sync sees the new name.
func (s *Store) RefreshAssigneeNames(ctx context.Context, userID *int64) (int64, error) {
	tag, err := s.db.Exec(ctx, `UPDATE leads l SET assigned_to_name = u.name, updated_at = now()
		FROM directory_users u
		WHERE l.assigned_to = u.id AND ($1::bigint IS NULL OR u.id = $1)
		  AND l.assigned_to_name IS DISTINCT FROM u.name`, userID)
	if err != nil {
		return 0, fmt.Errorf("refresh assignee names: %w", err)
	}
	return tag.RowsAffected(), nil
}

// IdentityHandler feeds the directory read model from identity's stream
// and refreshes the denormalised assignee names of a renamed user.
func (s *Store) IdentityHandler() outbox.Handler {
	base := directory.Handle(s.db)
	return func(ctx context.Context, ev outbox.Event) error {
		if err := base(ctx, ev); err != nil {
			return err
		}
		if ev.Type != directory.UserCreated && ev.Type != directory.UserUpdated {
			return nil
		}
		var u directory.User
		if err := json.Unmarshal(ev.Data, &u); err != nil {
			return nil // undecodable: the directory handler ignored it too
		}
		_, err := s.RefreshAssigneeNames(ctx, &u.ID)
		return err
	}
}
