package deals

import (
	"context"
	"strings"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/validate"
)

// ListStages returns the pipeline in order.
func (s *Service) ListStages(ctx context.Context) ([]Stage, error) { return s.store.ListStages(ctx) }

// GetStage returns one stage.
func (s *Service) GetStage(ctx context.Context, id int64) (Stage, error) {
	return s.store.GetStage(ctx, id)
}

func stageRecord(in dealsapi.StageInput, cur *Stage) (StageRecord, error) {
	var errs validate.Errors
	rec := StageRecord{Outcome: StatusOpen}
	if cur != nil {
		rec.Name, rec.Outcome = cur.Name, cur.Outcome
	}
	name := strings.TrimSpace(in.Name)
	if errs.Required("name", name) {
		errs.MaxLen("name", name, validate.MaxName)
	}
	rec.Name = name
	if in.Position.Set && !in.Position.Null {
		if in.Position.Value < 1 {
			errs.Add("position", "must be an integer of at least 1")
		}
		p := in.Position.Value
		rec.Position = &p
	}
	if in.Outcome.Set {
		switch {
		case in.Outcome.Null || in.Outcome.Value == "":
			rec.Outcome = StatusOpen
		case errs.OneOf("outcome", in.Outcome.Value, Outcomes...):
			rec.Outcome = in.Outcome.Value
		}
	}
	return rec, errs.Err()
}

// CreateStage adds a stage (admin); without a position it goes last.
func (s *Service) CreateStage(ctx context.Context, in dealsapi.StageInput) (Stage, error) {
	rec, err := stageRecord(in, nil)
	if err != nil {
		return Stage{}, err
	}
	return s.store.CreateStage(ctx, rec)
}

// UpdateStage renames, moves or changes the outcome of a stage (admin).
func (s *Service) UpdateStage(ctx context.Context, id int64, in dealsapi.StageInput) (Stage, error) {
	cur, err := s.store.GetStage(ctx, id)
	if err != nil {
		return Stage{}, err
	}
	rec, err := stageRecord(in, &cur)
	if err != nil {
		return Stage{}, err
	}
	return s.store.UpdateStage(ctx, id, rec)
}

// DeleteStage removes an unused stage (admin).
func (s *Service) DeleteStage(ctx context.Context, id int64) error {
	return s.store.DeleteStage(ctx, id)
}
