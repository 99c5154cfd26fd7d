package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
)

// DealOwner returns a deal's assignee and creator.
func (s *Store) DealOwner(ctx context.Context, id int64) (directory.Owner, error) {
	var o directory.Owner
	err := s.db.QueryRow(ctx, `SELECT assigned_to, created_by FROM deals WHERE id = $1`, id).Scan(&o.AssignedTo, &o.CreatedBy)
	if db.IsNoRows(err) {
		return o, fault.NotFound("deal")
	}
	return o, err
}

// QuoteOwner returns the assignee and creator of a quote's deal.
func (s *Store) QuoteOwner(ctx context.Context, id int64) (directory.Owner, error) {
	var o directory.Owner
	err := s.db.QueryRow(ctx, `SELECT d.assigned_to, d.created_by FROM quotes q JOIN deals d ON d.id = q.deal_id
		WHERE q.id = $1`, id).Scan(&o.AssignedTo, &o.CreatedBy)
	if db.IsNoRows(err) {
		return o, fault.NotFound("quote")
	}
	return o, err
}

// CanWrite decides write access with this schema's user directory.
func (s *Store) CanWrite(ctx context.Context, o directory.Owner) error {
	return directory.CheckWrite(ctx, s.db, o)
}

// UserExists reports a known user (active or not).
func (s *Store) UserExists(ctx context.Context, id int64) (bool, error) {
	return s.users.Exists(ctx, id)
}

// UserName returns a user's name, nil when unknown.
func (s *Store) UserName(ctx context.Context, id int64) (*string, error) {
	var name string
	err := s.db.QueryRow(ctx, `SELECT name FROM directory_users WHERE id = $1`, id).Scan(&name)
	if db.IsNoRows(err) {
		return nil, nil
	}
	return &name, err
}

// TeamMembers lists the users of the caller's team (the token's team, else
// the directory's); empty when the caller has no team.
func (s *Store) TeamMembers(ctx context.Context, userID int64, teamID *int64) ([]int64, error) {
	rows, err := s.db.Query(ctx, `SELECT id FROM directory_users
		WHERE team_id = COALESCE($2::bigint, (SELECT team_id FROM directory_users WHERE id = $1)) ORDER BY id`, userID, teamID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}
