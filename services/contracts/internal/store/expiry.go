package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// ExpireAndRenew processes due contracts in batches. Each batch claims its
// rows with FOR UPDATE SKIP LOCKED and changes them in the same
// transaction as their system notes: a concurrent run skips what this one
// holds, and once committed the rows no longer match, so no contract is
// expired or renewed twice.
//
// A row skipped because someone else held it (a user's PUT, a concurrent
// run) would otherwise wait a whole day. So a final pass claims what is
// still due with a blocking FOR UPDATE under lock_timeout: a short hold is
// waited out (and a row a concurrent run changed no longer matches once it
// commits); a lock held longer than the timeout ends the run with
// contracts.ErrDueLocked, which the expiry task returns so asynq retries
// the day's task later instead of stalling its one worker.
func (s *Store) ExpireAndRenew(ctx context.Context, today time.Time, batch int) (contracts.ExpiryResult, error) {
	var res contracts.ExpiryResult
	for _, wait := range []bool{false, true} {
		for {
			n := 0
			err := s.db.InTx(ctx, func(tx pgx.Tx) error {
				if wait {
					ms := max(s.lockWait.Milliseconds(), 1)
					if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", ms)); err != nil {
						return fmt.Errorf("lock timeout: %w", err)
					}
				}
				var err error
				n, err = expireBatch(ctx, tx, today, batch, wait, &res)
				return err
			})
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "55P03" { // lock_not_available
				return res, fmt.Errorf("%w: %v", contracts.ErrDueLocked, err)
			}
			if err != nil {
				return res, err
			}
			if n < batch {
				break
			}
		}
	}
	return res, nil
}

// expireBatch claims up to batch due contracts (skipping locked rows unless
// wait), expires or renews each with its system note and its event, counts
// them in res and returns how many it claimed.
func expireBatch(ctx context.Context, tx pgx.Tx, today time.Time, batch int, wait bool, res *contracts.ExpiryResult) (int, error) {
	lock := "FOR UPDATE SKIP LOCKED"
	if wait {
		lock = "FOR UPDATE"
	}
	rows, err := tx.Query(ctx, `SELECT id, termination_date, coalesce(end_date, effective_date), term_months, auto_renew FROM contracts
		WHERE status IN ('active', 'executed') AND termination_date < $1::date
		ORDER BY id LIMIT $2 `+lock, today, batch)
	if err != nil {
		return 0, fmt.Errorf("due contracts: %w", err)
	}
	type due struct {
		id     int64
		term   time.Time
		anchor time.Time
		month  int
		renew  bool
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (due, error) {
		var d due
		err := r.Scan(&d.id, &d.term, &d.anchor, &d.month, &d.renew)
		return d, err
	})
	if err != nil {
		return 0, fmt.Errorf("due contracts: %w", err)
	}
	changed := make([]int64, 0, len(list))
	renewed := map[int64]bool{}
	for _, d := range list {
		changed = append(changed, d.id)
		from := contracts.FormatDate(d.term)
		if d.renew {
			next, terms := contracts.RenewedTermination(d.anchor, d.term, d.month, today)
			to := contracts.FormatDate(next)
			if _, err := tx.Exec(ctx, `UPDATE contracts SET termination_date = $2::date, updated_at = now() WHERE id = $1`, d.id, to); err != nil {
				return len(list), fmt.Errorf("renew contract %d: %w", d.id, err)
			}
			if _, err := activity.AddNote(ctx, tx, activity.Contract, d.id, contracts.RenewalNote(from, to, d.month, terms), nil); err != nil {
				return len(list), fmt.Errorf("renewal note: %w", err)
			}
			res.Renewed++
			renewed[d.id] = true
			continue
		}
		if _, err := tx.Exec(ctx, `UPDATE contracts SET status = 'expired', updated_at = now() WHERE id = $1`, d.id); err != nil {
			return len(list), fmt.Errorf("expire contract %d: %w", d.id, err)
		}
		if _, err := activity.AddNote(ctx, tx, activity.Contract, d.id, contracts.ExpiryNote(from), nil); err != nil {
			return len(list), fmt.Errorf("expiry note: %w", err)
		}
		res.Expired++
	}
	return len(list), expiryEvents(ctx, tx, changed, renewed)
}

// expiryEvents records the events of one batch in the order its contracts
// were changed: contract.updated for a renewal (its termination_date
// moved), contract.status_changed for an expiry (its status is all that
// moved). The contracts are read back in one query, after their changes,
// as contractsapi.GetContract answers them.
func expiryEvents(ctx context.Context, tx pgx.Tx, ids []int64, renewed map[int64]bool) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, contractSelect+` WHERE c.id = ANY($1)`, ids)
	if err != nil {
		return fmt.Errorf("changed contracts: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanContract)
	if err != nil {
		return fmt.Errorf("changed contracts: %w", err)
	}
	byID := make(map[int64]contracts.Contract, len(list))
	for _, c := range list {
		byID[c.ID] = c
	}
	recs := make([]outbox.Record, 0, len(ids))
	for _, id := range ids {
		c, ok := byID[id]
		if !ok {
			return fmt.Errorf("changed contract %d vanished", id)
		}
		typ := contracts.EventStatusChanged
		if renewed[id] {
			typ = contracts.EventUpdated
		}
		recs = append(recs, record(typ, c))
	}
	return addEvents(ctx, tx, recs)
}
