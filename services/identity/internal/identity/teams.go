package identity

import (
	"context"
	"strings"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/validate"
)

// TeamInput is a team to create, or a team's new name: the body of
// CreateTeam and UpdateTeam, decoded into the contract's type.
type TeamInput = identityapi.TeamInput

func checkTeamInput(in *TeamInput) error {
	in.Name = strings.TrimSpace(in.Name)
	var v validate.Errors
	checkName(&v, in.Name)
	return v.Err()
}

// CreateTeam validates and stores a team.
func (s *Service) CreateTeam(ctx context.Context, in TeamInput) (Team, error) {
	if err := checkTeamInput(&in); err != nil {
		return Team{}, err
	}
	return s.store.CreateTeam(ctx, in.Name)
}

// UpdateTeam renames a team.
func (s *Service) UpdateTeam(ctx context.Context, id int64, in TeamInput) (Team, error) {
	if err := checkTeamInput(&in); err != nil {
		return Team{}, err
	}
	return s.store.UpdateTeam(ctx, id, in.Name)
}

// Teams lists every team.
func (s *Service) Teams(ctx context.Context) ([]Team, error) { return s.store.ListTeams(ctx) }

// Team returns one team.
func (s *Service) Team(ctx context.Context, id int64) (Team, error) { return s.store.TeamByID(ctx, id) }

// DeleteTeam deletes a team and unassigns its members.
func (s *Service) DeleteTeam(ctx context.Context, id int64) error { return s.store.DeleteTeam(ctx, id) }
