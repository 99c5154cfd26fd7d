package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

// MoveLeads points the leads of merged contacts (object contact) or
// companies (object company) at into in one statement, then publishes
// lead.updated with each moved lead as it now reads, in the same
// transaction. A repeat finds none and answers 0. History records the
// change under the request's channel (mergehttp sets via merge).
func (s *Store) MoveLeads(ctx context.Context, object string, into int64, merged []int64) (int64, error) {
	sql := `UPDATE leads SET contact_id = $1, updated_at = now() WHERE contact_id = ANY($2) RETURNING ` + Columns
	if object == mergeapi.Company {
		sql = `UPDATE leads SET company_id = $1, updated_at = now() WHERE company_id = ANY($2) RETURNING ` + Columns
	}
	var n int64
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		// Held before the leads are locked, as every write does.
		defs, err := hold(ctx, tx)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, sql, into, merged)
		if err != nil {
			return fmt.Errorf("move leads: %w", err)
		}
		moved, err := pgx.CollectRows(rows, Scan)
		if err != nil {
			return fmt.Errorf("move leads: %w", err)
		}
		slices.SortFunc(moved, func(a, b leads.Lead) int { return cmp.Compare(a.ID, b.ID) })
		for _, l := range moved {
			render(defs, &l)
			if err := event(ctx, tx, leads.EventUpdated, l); err != nil {
				return err
			}
		}
		n = int64(len(moved))
		return nil
	})
	return n, err
}
