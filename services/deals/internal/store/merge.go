package store

import (
	"context"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/deals/internal/deals"
)

// MoveDeals points the deals of m's merged contacts or companies at the
// survivor in one statement (a repeat finds none and answers 0), then
// publishes deal.updated for each moved deal with its record as it now
// reads, in the same transaction. History records the change as the
// context's channel (mergehttp sets via merge). A company move sets the
// survivor's name and version where m carries them, so a later event of
// an older version of either company never rolls the name back.
func (s *Store) MoveDeals(ctx context.Context, m deals.Move) (int64, error) {
	var moved []int64
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		// Held before the deals are locked, as every write does.
		defs, err := hold(ctx, tx)
		if err != nil {
			return err
		}
		var rows pgx.Rows
		if m.Object == mergeapi.Company {
			rows, err = tx.Query(ctx, `UPDATE deals SET company_id = $1,
					company_name = CASE WHEN $3::text IS NULL THEN company_name ELSE $3 END,
					company_updated_at = CASE WHEN $3::text IS NULL THEN company_updated_at ELSE $4 END,
					updated_at = now()
				WHERE company_id = ANY($2) RETURNING id`, m.Into, m.Merged, m.CompanyName, m.CompanyUpdatedAt)
		} else {
			rows, err = tx.Query(ctx, `UPDATE deals SET contact_id = $1, updated_at = now()
				WHERE contact_id = ANY($2) RETURNING id`, m.Into, m.Merged)
		}
		if err != nil {
			return err
		}
		if moved, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return err
		}
		slices.Sort(moved)
		for _, id := range moved {
			rows, err := tx.Query(ctx, dealSelect+`WHERE d.id = $1`, id)
			d, err := one(rows, err, scanDeal, "deal")
			if err != nil {
				return err
			}
			render(defs, &d)
			if err := outbox.Add(ctx, tx, Stream, deals.EventDealUpdated, strconv.FormatInt(id, 10), d.Public()); err != nil {
				return err
			}
		}
		return nil
	})
	return int64(len(moved)), err
}
