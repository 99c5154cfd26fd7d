package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Result is what became of one delivery of a batch: an attempt made
// (Tried, with its Outcome), or given back unattempted (the batch stopped
// before it), due again at Outcome.NextAttemptAt when set, its attempt
// counter and log unchanged.
type Result struct {
	Task
	Tried   bool
	Outcome Outcome
}

// RecordBatch stores the results of a batch in one statement and releases
// its deliveries; a 410 among them deactivates the subscription in the same
// transaction. Each applies only while its delivery is still that attempt
// and queued in batch (nil: queued outside any batch, a ping), so a
// duplicate or superseded task changes nothing. It returns the ids that
// applied.
func (s *Store) RecordBatch(ctx context.Context, batch *int64, rs []Result) (map[int64]bool, error) {
	n := len(rs)
	var (
		ids      = make([]int64, n)
		attempts = make([]int32, n)
		tried    = make([]bool, n)
		status   = make([]*string, n)
		codes    = make([]*int32, n)
		took     = make([]*int32, n)
		errs     = make([]*string, n)
		bodies   = make([]*string, n)
		next     = make([]*time.Time, n)
	)
	for i, r := range rs {
		ids[i], attempts[i], tried[i] = r.ID, int32(r.Attempt), r.Tried
		o := r.Outcome
		if !o.NextAttemptAt.IsZero() && (!r.Tried || o.Status == "pending") {
			next[i] = &o.NextAttemptAt
		}
		if !r.Tried {
			continue
		}
		status[i], errs[i], bodies[i] = &o.Status, o.Error, o.Body
		ms := int32(o.DurationMS)
		took[i] = &ms
		if o.StatusCode != nil {
			c := int32(*o.StatusCode)
			codes[i] = &c
		}
	}
	applied := map[int64]bool{}
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE deliveries d SET
				status = CASE WHEN r.tried THEN r.status ELSE d.status END,
				attempt = d.attempt + CASE WHEN r.tried THEN 1 ELSE 0 END,
				status_code = CASE WHEN r.tried THEN r.code ELSE d.status_code END,
				duration_ms = CASE WHEN r.tried THEN r.took ELSE d.duration_ms END,
				error = CASE WHEN r.tried THEN r.err ELSE d.error END,
				response_body = CASE WHEN r.tried THEN r.body ELSE d.response_body END,
				last_attempt_at = CASE WHEN r.tried THEN now() ELSE d.last_attempt_at END,
				next_attempt_at = COALESCE(r.next, d.next_attempt_at),
				queued = false, queued_at = NULL, queued_batch = NULL
			FROM unnest($1::bigint[], $2::int[], $3::bool[], $4::text[], $5::int[], $6::int[], $7::text[], $8::text[], $9::timestamptz[])
				AS r(id, attempt, tried, status, code, took, err, body, next)
			WHERE d.id = r.id AND d.attempt = r.attempt AND d.queued AND d.queued_batch IS NOT DISTINCT FROM $10
			RETURNING d.id, d.subscription_id`,
			ids, attempts, tried, status, codes, took, errs, bodies, next, batch)
		if err != nil {
			return err
		}
		var id, sub int64
		if _, err := pgx.ForEachRow(rows, []any{&id, &sub}, func() error {
			applied[id] = true
			return nil
		}); err != nil {
			return err
		}
		for _, r := range rs {
			if r.Tried && r.Outcome.Disable != "" && applied[r.ID] {
				_, err = tx.Exec(ctx, `UPDATE subscriptions SET active = false, disabled_reason = $2, updated_at = now()
					WHERE id = $1`, sub, r.Outcome.Disable)
				return err
			}
		}
		return nil
	})
	return applied, err
}
