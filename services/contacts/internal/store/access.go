package store

import (
	"context"

	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
)

// Definitions lists object's custom fields.
func (s *Store) Definitions(ctx context.Context, object string) ([]customfield.Definition, error) {
	return customfield.Definitions(ctx, s.db, object)
}

// ContactExists reports whether id is a stored contact.
func (s *Store) ContactExists(ctx context.Context, id int64) (bool, error) {
	return s.exists(ctx, "contacts", id)
}

// CompanyExists reports whether id is a stored company.
func (s *Store) CompanyExists(ctx context.Context, id int64) (bool, error) {
	return s.exists(ctx, "companies", id)
}

// UserExists checks the directory read model, and identity on a miss.
func (s *Store) UserExists(ctx context.Context, id int64) (bool, error) {
	return s.users.Exists(ctx, id)
}

// UserTeam returns the user's team from the read model (nil when none).
// ContactOwner returns a contact's assignee and creator.
func (s *Store) ContactOwner(ctx context.Context, id int64) (directory.Owner, error) {
	var o directory.Owner
	err := s.db.QueryRow(ctx, `SELECT assigned_to, created_by FROM contacts WHERE id = $1`, id).Scan(&o.AssignedTo, &o.CreatedBy)
	if db.IsNoRows(err) {
		return o, fault.NotFound("contact")
	}
	return o, err
}

// CompanyOwner returns a company's creator.
func (s *Store) CompanyOwner(ctx context.Context, id int64) (directory.Owner, error) {
	var o directory.Owner
	err := s.db.QueryRow(ctx, `SELECT created_by FROM companies WHERE id = $1`, id).Scan(&o.CreatedBy)
	if db.IsNoRows(err) {
		return o, fault.NotFound("company")
	}
	return o, err
}

// CanWrite decides write access with this schema's user directory.
func (s *Store) CanWrite(ctx context.Context, o directory.Owner) error {
	return directory.CheckWrite(ctx, s.db, o)
}

func (s *Store) UserTeam(ctx context.Context, id int64) (*int64, error) {
	var team *int64
	err := s.db.QueryRow(ctx, `SELECT team_id FROM directory_users WHERE id = $1`, id).Scan(&team)
	if db.IsNoRows(err) {
		return nil, nil
	}
	return team, err
}
