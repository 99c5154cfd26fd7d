package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

const teamCols = `id, name, created_at, updated_at`

func oneTeam(rows pgx.Rows, err error) (identity.Team, error) {
	if err != nil {
		return identity.Team{}, err
	}
	t, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[identity.Team])
	switch {
	case db.IsNoRows(err):
		return t, identity.ErrTeamNotFound
	case db.IsUniqueViolation(err, "teams_name_key"):
		return t, identity.ErrTeamNameTaken
	}
	return t, err
}

// ListTeams returns every team by name.
func (s *Store) ListTeams(ctx context.Context) ([]identity.Team, error) {
	rows, err := s.db.Query(ctx, `SELECT `+teamCols+` FROM teams ORDER BY lower(name), id`)
	if err != nil {
		return nil, fmt.Errorf("list teams: %w", err)
	}
	teams, err := pgx.CollectRows(rows, pgx.RowToStructByName[identity.Team])
	if err != nil {
		return nil, fmt.Errorf("list teams: %w", err)
	}
	return teams, nil
}

// TeamByID returns one team.
func (s *Store) TeamByID(ctx context.Context, id int64) (identity.Team, error) {
	rows, err := s.db.Query(ctx, `SELECT `+teamCols+` FROM teams WHERE id = $1`, id)
	return oneTeam(rows, err)
}

// CreateTeam inserts a team and its team.created event.
func (s *Store) CreateTeam(ctx context.Context, name string) (identity.Team, error) {
	var t identity.Team
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `INSERT INTO teams (name) VALUES ($1) RETURNING `+teamCols, name)
		if t, err = oneTeam(rows, err); err != nil {
			return err
		}
		if err := outbox.Add(ctx, tx, directory.Stream, directory.TeamCreated, fmt.Sprint(t.ID), identity.TeamEvent(t)); err != nil {
			return err
		}
		_, err = appendAudit(ctx, tx, own(ctx, identityapi.AuditTeamCreated, "team", t.ID, map[string]string{"name": t.Name}))
		return err
	})
	return t, err
}

// UpdateTeam renames a team and records team.updated.
func (s *Store) UpdateTeam(ctx context.Context, id int64, name string) (identity.Team, error) {
	var t identity.Team
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var old string
		err := tx.QueryRow(ctx, `SELECT name FROM teams WHERE id = $1 FOR UPDATE`, id).Scan(&old)
		if db.IsNoRows(err) {
			return identity.ErrTeamNotFound
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `UPDATE teams SET name = $2, updated_at = now() WHERE id = $1 RETURNING `+teamCols, id, name)
		if t, err = oneTeam(rows, err); err != nil {
			return err
		}
		if err := outbox.Add(ctx, tx, directory.Stream, directory.TeamUpdated, fmt.Sprint(t.ID), identity.TeamEvent(t)); err != nil {
			return err
		}
		if old == t.Name {
			return nil
		}
		_, err = appendAudit(ctx, tx, own(ctx, identityapi.AuditTeamUpdated, "team", t.ID,
			map[string]any{"changes": []change{{"name", old, t.Name}}}))
		return err
	})
	return t, err
}

// DeleteTeam unassigns the team's members (each a user.updated event, so
// read models see the change even without handling team.deleted) and
// deletes the team.
func (s *Store) DeleteTeam(ctx context.Context, id int64) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE users SET team_id = NULL, updated_at = now() WHERE team_id = $1 RETURNING `+userCols, id)
		if err != nil {
			return err
		}
		members, err := collectUsers(rows)
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `DELETE FROM teams WHERE id = $1 RETURNING `+teamCols, id)
		t, err := oneTeam(rows, err)
		if err != nil {
			return err
		}
		for _, u := range members {
			if err := outbox.Add(ctx, tx, directory.Stream, directory.UserUpdated, fmt.Sprint(u.ID), identity.DirectoryEntry(u)); err != nil {
				return err
			}
		}
		t.UpdatedAt = timestamp.Now()
		if err := outbox.Add(ctx, tx, directory.Stream, directory.TeamDeleted, fmt.Sprint(t.ID), identity.TeamEvent(t)); err != nil {
			return err
		}
		_, err = appendAudit(ctx, tx, own(ctx, identityapi.AuditTeamDeleted, "team", t.ID,
			map[string]any{"name": t.Name, "members_unassigned": len(members)}))
		return err
	})
}
