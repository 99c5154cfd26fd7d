package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/deals/internal/deals"
)

const stageCols = `id, name, position, outcome, created_at, updated_at`

func scanStage(row pgx.CollectableRow) (deals.Stage, error) {
	var s deals.Stage
	err := row.Scan(&s.ID, &s.Name, &s.Position, &s.Outcome, &s.CreatedAt, &s.UpdatedAt)
	return s, err
}

// ListStages returns the stages by position.
func (s *Store) ListStages(ctx context.Context) ([]deals.Stage, error) {
	rows, err := s.db.Query(ctx, `SELECT `+stageCols+` FROM deal_stages ORDER BY position, id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanStage) // never nil: an empty pipeline is []
}

// GetStage returns one stage, or a not-found fault.
func (s *Store) GetStage(ctx context.Context, id int64) (deals.Stage, error) {
	rows, err := s.db.Query(ctx, `SELECT `+stageCols+` FROM deal_stages WHERE id = $1`, id)
	return one(rows, err, scanStage, "deal stage")
}

// FirstStage returns the first stage (by position) with the outcome, or not found.
func (s *Store) FirstStage(ctx context.Context, outcome string) (deals.Stage, error) {
	rows, err := s.db.Query(ctx, `SELECT `+stageCols+` FROM deal_stages WHERE outcome = $1 ORDER BY position, id LIMIT 1`, outcome)
	return one(rows, err, scanStage, "deal stage")
}

// lockStages serialises every change of positions (create, move, delete),
// while plain reads and deal writes go on.
func lockStages(ctx context.Context, tx pgx.Tx) (int, error) {
	if _, err := tx.Exec(ctx, `LOCK TABLE deal_stages IN SHARE ROW EXCLUSIVE MODE`); err != nil {
		return 0, err
	}
	var n int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM deal_stages`).Scan(&n)
	return n, err
}

func clamp(p, lo, hi int) int { return max(lo, min(p, hi)) }

func nameTaken(err error) error {
	if db.IsUniqueViolation(err, "deal_stages_name") {
		return fault.Invalid("name", "is already used by another stage")
	}
	return err
}

// CreateStage inserts a stage at rec.Position (clamped), or last.
func (s *Store) CreateStage(ctx context.Context, rec deals.StageRecord) (deals.Stage, error) {
	var st deals.Stage
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		n, err := lockStages(ctx, tx)
		if err != nil {
			return err
		}
		pos := n + 1
		if rec.Position != nil {
			pos = clamp(*rec.Position, 1, n+1)
		}
		if _, err := tx.Exec(ctx, `UPDATE deal_stages SET position = position + 1 WHERE position >= $1`, pos); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `INSERT INTO deal_stages (name, position, outcome) VALUES ($1, $2, $3) RETURNING `+stageCols,
			rec.Name, pos, rec.Outcome)
		st, err = one(rows, err, scanStage, "deal stage")
		return err
	})
	return st, nameTaken(err)
}

// UpdateStage renames and moves a stage. Its outcome can change only while
// no deal is in it: otherwise those deals' status would silently change.
func (s *Store) UpdateStage(ctx context.Context, id int64, rec deals.StageRecord) (deals.Stage, error) {
	var st deals.Stage
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		n, err := lockStages(ctx, tx)
		if err != nil {
			return err
		}
		// FOR UPDATE before looking for deals: a deal write holds its
		// stage FOR SHARE until it commits, so one that is putting a deal
		// into this stage finishes first and the check below sees it.
		rows, err := tx.Query(ctx, `SELECT `+stageCols+` FROM deal_stages WHERE id = $1 FOR UPDATE`, id)
		cur, err := one(rows, err, scanStage, "deal stage")
		if err != nil {
			return err
		}
		if rec.Outcome != cur.Outcome {
			var used bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM deals WHERE stage_id = $1)`, id).Scan(&used); err != nil {
				return err
			}
			if used {
				return fault.Conflict("stage_in_use", "the outcome of a stage that holds deals cannot change; move its deals first")
			}
		}
		pos := cur.Position
		if rec.Position != nil {
			pos = clamp(*rec.Position, 1, n)
		}
		switch {
		case pos < cur.Position:
			_, err = tx.Exec(ctx, `UPDATE deal_stages SET position = position + 1 WHERE position >= $1 AND position < $2`, pos, cur.Position)
		case pos > cur.Position:
			_, err = tx.Exec(ctx, `UPDATE deal_stages SET position = position - 1 WHERE position > $1 AND position <= $2`, cur.Position, pos)
		}
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `UPDATE deal_stages SET name = $2, position = $3, outcome = $4, updated_at = now()
			WHERE id = $1 RETURNING `+stageCols, id, rec.Name, pos, rec.Outcome)
		st, err = one(rows, err, scanStage, "deal stage")
		return err
	})
	return st, nameTaken(err)
}

// DeleteStage removes a stage no deal uses; the pipeline keeps ≥ 1 stage.
func (s *Store) DeleteStage(ctx context.Context, id int64) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		n, err := lockStages(ctx, tx)
		if err != nil {
			return err
		}
		var pos int
		err = tx.QueryRow(ctx, `DELETE FROM deal_stages WHERE id = $1 RETURNING position`, id).Scan(&pos)
		switch {
		case db.IsNoRows(err):
			return fault.NotFound("deal stage")
		case db.IsForeignKeyViolation(err, ""):
			return fault.Conflict("stage_in_use", "the stage holds deals; move them to another stage first")
		case err != nil:
			return err
		}
		if n <= 1 {
			return fault.Conflict("conflict", "the pipeline needs at least one stage")
		}
		_, err = tx.Exec(ctx, `UPDATE deal_stages SET position = position - 1 WHERE position > $1`, pos)
		return err
	})
}
