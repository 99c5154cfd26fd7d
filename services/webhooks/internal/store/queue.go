package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
)

// dispatchLock lets one dispatcher at a time (across replicas) hand out
// work, so the per-subscription cap on batches in flight holds exactly.
var dispatchLock = db.LockKey("webhooks:dispatch")

// Task is a delivery handed to a worker for one attempt.
type Task struct {
	ID      int64
	Attempt int
}

// Batch is a subscription's deliveries handed to one worker, to be sent
// in this order over one connection. ID is unique (a sequence): the
// outcome of a batch applies only to deliveries still queued in it.
type Batch struct {
	ID             int64
	SubscriptionID int64
	Tasks          []Task
}

type batchRow struct {
	Batch, Sub, ID int64
	Attempt        int
}

// group folds rows ordered by batch into batches, keeping their order.
func group(rows []batchRow) []Batch {
	var out []Batch
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1].ID != r.Batch {
			out = append(out, Batch{ID: r.Batch, SubscriptionID: r.Sub})
		}
		b := &out[len(out)-1]
		b.Tasks = append(b.Tasks, Task{ID: r.ID, Attempt: r.Attempt})
	}
	return out
}

// Dispatch hands out batches to every active subscription with free slots
// (fewer than perEndpoint batches in flight), one per free slot: its due
// deliveries, oldest due first, each the head of its record (no earlier
// pending delivery for the same subscription and record, so per-record
// order holds), cut into batches of at most size and marked queued in
// them. It returns nothing while another replica's dispatcher runs.
func (s *Store) Dispatch(ctx context.Context, perEndpoint, size int) ([]Batch, error) {
	var batches []Batch
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var got bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, dispatchLock).Scan(&got); err != nil || !got {
			return err
		}
		// The index stops each subscription's scan after its free slots ×
		// size rows, so the cost follows subscriptions × slots, not the
		// backlog.
		rows, err := tx.Query(ctx, `WITH busy AS (
				SELECT subscription_id, count(DISTINCT queued_batch) AS n FROM deliveries WHERE queued GROUP BY subscription_id
			), subs AS (
				SELECT s.id, $1 - coalesce(b.n, 0) AS free FROM subscriptions s LEFT JOIN busy b ON b.subscription_id = s.id
				WHERE s.active AND coalesce(b.n, 0) < $1
			), pick AS (
				SELECT d.id, d.subscription_id, d.next_attempt_at,
					(row_number() OVER (PARTITION BY d.subscription_id ORDER BY d.next_attempt_at, d.id) - 1) / $2 AS chunk
				FROM subs, LATERAL (
					SELECT d.id, d.subscription_id, d.next_attempt_at FROM deliveries d
					WHERE d.subscription_id = subs.id AND d.status = 'pending' AND NOT d.queued
						AND d.next_attempt_at <= now()
						AND NOT EXISTS (SELECT 1 FROM deliveries e WHERE e.subscription_id = d.subscription_id
							AND e.record_key = d.record_key AND e.status = 'pending' AND e.id < d.id)
					ORDER BY d.next_attempt_at, d.id LIMIT subs.free * $2
				) d
			), batch AS (
				SELECT subscription_id, chunk, nextval('delivery_batches') AS id FROM pick GROUP BY subscription_id, chunk
			), marked AS (
				UPDATE deliveries d SET queued = true, queued_at = now(), queued_batch = batch.id
				FROM pick JOIN batch USING (subscription_id, chunk)
				WHERE d.id = pick.id RETURNING batch.id AS batch, d.subscription_id, d.id, d.attempt, pick.next_attempt_at
			)
			SELECT batch, subscription_id, id, attempt FROM marked ORDER BY batch, next_attempt_at, id`, perEndpoint, size)
		if err != nil {
			return err
		}
		got2, err := pgx.CollectRows(rows, pgx.RowToStructByPos[batchRow])
		batches = group(got2)
		return err
	})
	return batches, err
}

// Release gives a batch's deliveries back to the dispatcher unattempted
// (its task could not be enqueued).
func (s *Store) Release(ctx context.Context, b Batch) error {
	ids, attempts := split(b.Tasks)
	_, err := s.db.Exec(ctx, `UPDATE deliveries d SET queued = false, queued_at = NULL, queued_batch = NULL
		FROM unnest($1::bigint[], $2::int[]) AS t(id, attempt)
		WHERE d.id = t.id AND d.attempt = t.attempt AND d.queued AND d.queued_batch = $3`, ids, attempts, b.ID)
	return err
}

func split(ts []Task) ([]int64, []int32) {
	ids, attempts := make([]int64, len(ts)), make([]int32, len(ts))
	for i, t := range ts {
		ids[i], attempts[i] = t.ID, int32(t.Attempt)
	}
	return ids, attempts
}

// Stale returns the batches queued longer than age ago (their task was
// lost: Redis lost it, or the process died before enqueueing) and restarts
// their clock, for the caller to enqueue again. A ping left queued by a
// process that died mid-send becomes a batch of its own.
func (s *Store) Stale(ctx context.Context, age time.Duration) ([]Batch, error) {
	rows, err := s.db.Query(ctx, `WITH stale AS (
			UPDATE deliveries SET queued_at = now(), queued_batch = coalesce(queued_batch, -id)
			WHERE queued AND status = 'pending' AND queued_at < now() - make_interval(secs => $1)
			RETURNING queued_batch, subscription_id, id, attempt, next_attempt_at
		)
		SELECT queued_batch, subscription_id, id, attempt FROM stale ORDER BY queued_batch, next_attempt_at, id`, age.Seconds())
	if err != nil {
		return nil, err
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[batchRow])
	return group(got), err
}

// Job is what a worker needs to send one delivery.
type Job struct {
	ID, SubscriptionID int64
	EventSeq           *int64
	EventType          string
	Status             string
	Queued             bool
	Batch              *int64 // the batch it is queued in (nil for a ping)
	Attempt            int
	CreatedAt          time.Time
	URL                string
	Active             bool
	Secret             []byte
	PreviousSecret     []byte // nil when none or expired
	Data               json.RawMessage
	OccurredAt         time.Time // the event's, or the ping's creation
}

const jobQuery = `SELECT d.id, d.subscription_id, d.event_seq, d.event_type, d.status, d.queued, d.queued_batch, d.attempt,
		d.created_at, s.url, s.active, s.secret,
		CASE WHEN s.previous_secret_expires_at > now() THEN s.previous_secret END,
		COALESCE(e.data, jsonb_build_object('webhook_id', s.id)), COALESCE(e.occurred_at, d.created_at)
	FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id
	LEFT JOIN events e ON e.seq = d.event_seq`

// Job loads a delivery with its subscription and event; ok is false when
// it no longer exists.
func (s *Store) Job(ctx context.Context, id int64) (Job, bool, error) {
	jobs, err := s.Jobs(ctx, []int64{id})
	if err != nil || len(jobs) == 0 {
		return Job{}, false, err
	}
	return jobs[0], true, nil
}

// Jobs loads deliveries with their subscription and event in one query,
// in the order of ids; those that no longer exist are left out.
func (s *Store) Jobs(ctx context.Context, ids []int64) ([]Job, error) {
	rows, err := s.db.Query(ctx, jobQuery+` JOIN unnest($1::bigint[]) WITH ORDINALITY AS w(id, n) ON w.id = d.id ORDER BY w.n`, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Job])
}

// Outcome is the result of one attempt.
type Outcome struct {
	Status     string // pending (retry later), delivered, failed
	StatusCode *int
	DurationMS int
	Error      *string
	Body       *string
	// NextAttemptAt is set when Status is pending.
	NextAttemptAt time.Time
	// Disable deactivates the subscription with this reason (a 410).
	Disable string
}

// Record stores the outcome of attempt number attempt+1 of a delivery not
// in a batch (a ping) and releases it. It applies only while the delivery
// is still that attempt and queued (a duplicate's late answer changes
// nothing).
func (s *Store) Record(ctx context.Context, t Task, o Outcome) (bool, error) {
	applied, err := s.RecordBatch(ctx, nil, []Result{{Task: t, Tried: true, Outcome: o}})
	return len(applied) == 1, err
}

// Unqueue gives a ping back (its attempt could not be made).
func (s *Store) Unqueue(ctx context.Context, t Task) error {
	_, err := s.db.Exec(ctx, `UPDATE deliveries SET queued = false, queued_at = NULL
		WHERE id = $1 AND attempt = $2 AND queued AND queued_batch IS NULL`, t.ID, t.Attempt)
	return err
}
