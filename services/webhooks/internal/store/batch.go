package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
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

// RecordBatch stores the results of a batch and takes their deliveries
// out of it (the batch goes once it lists none); a 410 among them
// deactivates the subscription in the same transaction. Each attempt made
// is added to delivery_attempts by the statement that updates its
// delivery, so the log costs no further round trip. A result applies
// only while the batch still lists its delivery at that attempt (a
// delivery leaves its batch only here, so a listed one is pending), so a
// duplicate or superseded task changes nothing. It returns the ids that
// applied. Deliveries are found by id alone (see Jobs).
func (s *Store) RecordBatch(ctx context.Context, batch int64, rs []Result) (map[int64]bool, error) {
	applied := map[int64]bool{}
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var listed []int64
		var attempts []int32
		err := tx.QueryRow(ctx, `SELECT deliveries, attempts FROM batches WHERE id = $1 FOR UPDATE`, batch).Scan(&listed, &attempts)
		if db.IsNoRows(err) {
			return nil // recorded already
		}
		if err != nil {
			return err
		}
		inBatch := make(map[int64]int32, len(listed))
		for i, id := range listed {
			inBatch[id] = attempts[i]
		}
		var apply []Result
		for _, r := range rs {
			if a, ok := inBatch[r.ID]; ok && int(a) == r.Attempt {
				apply = append(apply, r)
				delete(inBatch, r.ID)
			}
		}
		if len(apply) == 0 {
			return nil
		}
		rows, err := tx.Query(ctx, `WITH u AS (
				UPDATE deliveries d SET
					status = CASE WHEN r.tried THEN r.status ELSE d.status END,
					attempt = d.attempt + CASE WHEN r.tried THEN 1 ELSE 0 END,
					status_code = CASE WHEN r.tried THEN r.code ELSE d.status_code END,
					duration_ms = CASE WHEN r.tried THEN r.took ELSE d.duration_ms END,
					error = CASE WHEN r.tried THEN r.err ELSE d.error END,
					response_body = CASE WHEN r.tried THEN r.body ELSE d.response_body END,
					last_attempt_at = CASE WHEN r.tried THEN r.at ELSE d.last_attempt_at END,
					next_attempt_at = COALESCE(r.next, d.next_attempt_at)
				FROM unnest($1::bigint[], $2::int[], $3::bool[], $4::text[], $5::int[], $6::int[], $7::text[], $8::text[],
						$9::timestamptz[], $10::timestamptz[])
					AS r(id, attempt, tried, status, code, took, err, body, next, at)
				WHERE d.id = r.id AND d.attempt = r.attempt
				RETURNING d.id, d.subscription_id, d.attempt, r.tried, r.code, r.err, r.took, r.body, r.at
			), logged AS (
				INSERT INTO delivery_attempts (delivery_id, attempt, status_code, error, duration_ms, response_body, attempted_at)
				SELECT id, attempt, code, err, took, body, at FROM u WHERE tried
			)
			SELECT id, subscription_id FROM u`, resultColumns(apply)...)
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
		if len(inBatch) == 0 {
			_, err = tx.Exec(ctx, `DELETE FROM batches WHERE id = $1`, batch)
		} else {
			// Stopped part-way: the rest stay in the batch, in order, but
			// for any no longer pending at that attempt (the batch goes
			// when none is left).
			rest, restAttempts := make([]int64, 0, len(inBatch)), make([]int32, 0, len(inBatch))
			for i, id := range listed {
				if _, ok := inBatch[id]; ok {
					rest, restAttempts = append(rest, id), append(restAttempts, attempts[i])
				}
			}
			_, err = tx.Exec(ctx, `WITH rest AS (
					SELECT array_agg(w.id ORDER BY w.n) AS ids, array_agg(w.attempt ORDER BY w.n) AS attempts
					FROM unnest($2::bigint[], $3::int[]) WITH ORDINALITY AS w(id, attempt, n)
					JOIN deliveries d ON d.id = w.id AND d.attempt = w.attempt
					WHERE d.status = 'pending'
				), gone AS (
					DELETE FROM batches WHERE id = $1 AND (SELECT ids FROM rest) IS NULL
				)
				UPDATE batches b SET deliveries = rest.ids, attempts = rest.attempts FROM rest
				WHERE b.id = $1 AND rest.ids IS NOT NULL`, batch, rest, restAttempts)
		}
		if err != nil {
			return err
		}
		for _, r := range apply {
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

// resultColumns turns results into the column arrays RecordBatch unnests.
func resultColumns(rs []Result) []any {
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
		at       = make([]*time.Time, n)
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
		at[i] = &o.At
		ms := int32(o.DurationMS)
		took[i] = &ms
		if o.StatusCode != nil {
			c := int32(*o.StatusCode)
			codes[i] = &c
		}
	}
	return []any{ids, attempts, tried, status, codes, took, errs, bodies, next, at}
}
