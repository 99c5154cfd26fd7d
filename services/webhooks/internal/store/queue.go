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
	ID, Sub  int64
	IDs      []int64
	Attempts []int32
}

func (r batchRow) batch() Batch {
	b := Batch{ID: r.ID, SubscriptionID: r.Sub, Tasks: make([]Task, len(r.IDs))}
	for i, id := range r.IDs {
		b.Tasks[i] = Task{ID: id, Attempt: int(r.Attempts[i])}
	}
	return b
}

func collectBatches(rows pgx.Rows, err error) ([]Batch, error) {
	if err != nil {
		return nil, err
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[batchRow])
	out := make([]Batch, len(got))
	for i, r := range got {
		out[i] = r.batch()
	}
	return out, err
}

// Dispatch hands out batches to every active subscription with free slots
// (fewer than perEndpoint batches in flight), one per free slot: its due
// deliveries not in a batch already, oldest due first, each the head of
// its record (no earlier pending delivery for the same subscription and
// record, so per-record order holds), cut into batches of at most size.
// It returns nothing while another replica's dispatcher runs.
//
// The head check is a scalar subquery with LIMIT 1 so that it is always a
// probe of deliveries_head by subscription and record: written as NOT
// EXISTS, a planner with stale statistics (a table that grew by thousands
// of rows in seconds) joined it on the subscription alone and read every
// pending delivery once per candidate.
func (s *Store) Dispatch(ctx context.Context, perEndpoint, size int) ([]Batch, error) {
	var batches []Batch
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var got bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, dispatchLock).Scan(&got); err != nil || !got {
			return err
		}
		// The index stops each subscription's scan after the deliveries
		// in flight plus its free slots × size rows, so the cost follows
		// subscriptions × slots, not the backlog.
		var err error
		batches, err = collectBatches(tx.Query(ctx, `WITH busy AS (
				SELECT subscription_id, count(*) AS n FROM batches GROUP BY subscription_id
			), subs AS (
				SELECT s.id, $1 - coalesce(b.n, 0) AS free FROM subscriptions s LEFT JOIN busy b ON b.subscription_id = s.id
				WHERE s.active AND coalesce(b.n, 0) < $1
			), pick AS (
				SELECT d.id, d.subscription_id, d.attempt,
					row_number() OVER (PARTITION BY d.subscription_id ORDER BY d.next_attempt_at, d.id) - 1 AS n
				FROM subs, LATERAL (
					SELECT d.id, d.subscription_id, d.attempt, d.next_attempt_at FROM deliveries d
					WHERE d.subscription_id = subs.id AND d.status = 'pending' AND d.next_attempt_at <= now()
						AND d.id NOT IN (SELECT unnest(deliveries) FROM batches)
						AND d.id = (SELECT e.id FROM deliveries e WHERE e.subscription_id = d.subscription_id
							AND e.record_key = d.record_key AND e.status = 'pending' ORDER BY e.id LIMIT 1)
					ORDER BY d.next_attempt_at, d.id LIMIT subs.free * $2
				) d
			)
			INSERT INTO batches (subscription_id, deliveries, attempts)
			SELECT subscription_id, array_agg(id ORDER BY n), array_agg(attempt ORDER BY n)
			FROM pick GROUP BY subscription_id, n / $2
			RETURNING id, subscription_id, deliveries, attempts`, perEndpoint, size))
		return err
	})
	return batches, err
}

// Release gives a batch's deliveries back to the dispatcher unattempted
// (its task could not be enqueued, or a ping could not be sent).
func (s *Store) Release(ctx context.Context, batch int64) error {
	_, err := s.db.Exec(ctx, `DELETE FROM batches WHERE id = $1`, batch)
	return err
}

// Stale returns the batches queued longer than age ago (their task was
// lost: Redis lost it, or the process died before enqueueing or while
// sending a ping) and restarts their clock, for the caller to enqueue
// again.
func (s *Store) Stale(ctx context.Context, age time.Duration) ([]Batch, error) {
	return collectBatches(s.db.Query(ctx, `UPDATE batches SET queued_at = now()
		WHERE queued_at < now() - make_interval(secs => $1)
		RETURNING id, subscription_id, deliveries, attempts`, age.Seconds()))
}

// Job is what a worker needs to send one delivery.
type Job struct {
	ID, SubscriptionID int64
	EventSeq           *int64
	EventType          string
	Attempt            int
	CreatedAt          time.Time
	URL                string
	Active             bool
	Secret             []byte
	PreviousSecret     []byte // nil when none or expired
	Data               json.RawMessage
	OccurredAt         time.Time // the event's, or the ping's creation
	SchemaVersion      int       // the event's data shape (1 for a ping)
}

// Jobs loads the deliveries still listed in a batch, with their
// subscription and event, in the batch's order: those recorded already
// (a duplicate task), no longer pending or at another attempt are left
// out, and nothing is returned once the batch is gone.
//
// Deliveries are found by id alone, status checked on the rows found: a
// join on status = 'pending' lets a planner whose statistics predate a
// burst of thousands of deliveries (autovacuum analyses a minute later)
// scan every pending delivery per batch through the partial index.
func (s *Store) Jobs(ctx context.Context, batch int64) ([]Job, error) {
	rows, err := s.db.Query(ctx, `SELECT d.id, d.subscription_id, d.event_seq, d.event_type, d.attempt,
			d.created_at, s.url, s.active, s.secret,
			CASE WHEN s.previous_secret_expires_at > now() THEN s.previous_secret END,
			COALESCE(e.data, jsonb_build_object('webhook_id', s.id)), COALESCE(e.occurred_at, d.created_at), d.status,
			COALESCE(e.schema_version, 1)
		FROM batches b, unnest(b.deliveries, b.attempts) WITH ORDINALITY AS w(id, attempt, n)
		JOIN deliveries d ON d.id = w.id AND d.attempt = w.attempt
		JOIN subscriptions s ON s.id = d.subscription_id
		LEFT JOIN events e ON e.seq = d.event_seq
		WHERE b.id = $1 ORDER BY w.n`, batch)
	if err != nil {
		return nil, err
	}
	jobs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (job, error) {
		var j job
		err := row.Scan(&j.ID, &j.SubscriptionID, &j.EventSeq, &j.EventType, &j.Attempt, &j.CreatedAt, &j.URL, &j.Active,
			&j.Secret, &j.PreviousSecret, &j.Data, &j.OccurredAt, &j.status, &j.SchemaVersion)
		return j, err
	})
	out := make([]Job, 0, len(jobs))
	for _, j := range jobs {
		if j.status == "pending" {
			out = append(out, j.Job)
		}
	}
	return out, err
}

type job struct {
	Job
	status string
}

// Outcome is the result of one attempt.
type Outcome struct {
	Status     string // pending (retry later), delivered, failed
	StatusCode *int
	DurationMS int
	Error      *string
	Body       *string
	// At is when the attempt started (the request was sent); the log's
	// attempted_at and the delivery's last_attempt_at. Required when the
	// result is Tried (the engine's attempt sets it).
	At time.Time
	// NextAttemptAt is set when Status is pending.
	NextAttemptAt time.Time
	// Disable deactivates the subscription with this reason (a 410).
	Disable string
}
