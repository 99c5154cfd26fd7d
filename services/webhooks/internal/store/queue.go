package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
)

// dispatchLock lets one dispatcher at a time (across replicas) hand out
// work, so the per-subscription cap on queued deliveries holds exactly.
var dispatchLock = db.LockKey("webhooks:dispatch")

// Task is a delivery handed to a worker for one attempt.
type Task struct {
	ID      int64
	Attempt int
}

// Dispatch marks up to batch due deliveries queued and returns them: pending,
// not queued, due, of an active subscription, with no earlier pending
// delivery for the same subscription and record (per-record order), and
// never more than perEndpoint queued per subscription. It returns nothing
// while another replica's dispatcher runs.
func (s *Store) Dispatch(ctx context.Context, perEndpoint, batch int) ([]Task, error) {
	var tasks []Task
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var got bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, dispatchLock).Scan(&got); err != nil || !got {
			return err
		}
		// Per active subscription with a free slot, its earliest due
		// deliveries (at most the free slots, the index stops the scan
		// there), so the cost follows subscriptions × slots, not the backlog.
		rows, err := tx.Query(ctx, `WITH busy AS (
				SELECT subscription_id, count(*) AS n FROM deliveries WHERE queued GROUP BY subscription_id
			), subs AS (
				SELECT s.id, $1 - coalesce(b.n, 0) AS free FROM subscriptions s
				LEFT JOIN busy b ON b.subscription_id = s.id
				WHERE s.active AND coalesce(b.n, 0) < $1
			), pick AS (
				SELECT d.id FROM subs, LATERAL (
					SELECT d.id, d.next_attempt_at FROM deliveries d
					WHERE d.subscription_id = subs.id AND d.status = 'pending' AND NOT d.queued
						AND d.next_attempt_at <= now()
						AND NOT EXISTS (SELECT 1 FROM deliveries e WHERE e.subscription_id = d.subscription_id
							AND e.record_key = d.record_key AND e.status = 'pending' AND e.id < d.id)
					ORDER BY d.next_attempt_at, d.id LIMIT subs.free
				) d ORDER BY d.next_attempt_at, d.id LIMIT $2
			)
			UPDATE deliveries SET queued = true, queued_at = now()
			WHERE id IN (SELECT id FROM pick) RETURNING id, attempt`, perEndpoint, batch)
		if err != nil {
			return err
		}
		tasks, err = pgx.CollectRows(rows, pgx.RowToStructByPos[Task])
		return err
	})
	return tasks, err
}

// Unqueue gives a delivery back to the dispatcher (its task could not be
// enqueued).
func (s *Store) Unqueue(ctx context.Context, t Task) error {
	_, err := s.db.Exec(ctx, `UPDATE deliveries SET queued = false, queued_at = NULL
		WHERE id = $1 AND attempt = $2 AND queued`, t.ID, t.Attempt)
	return err
}

// Stale returns deliveries queued longer than age ago (their task was lost:
// Redis lost it, or the process died before enqueueing) and restarts their
// clock, for the caller to enqueue again.
func (s *Store) Stale(ctx context.Context, age time.Duration) ([]Task, error) {
	rows, err := s.db.Query(ctx, `UPDATE deliveries SET queued_at = now()
		WHERE queued AND status = 'pending' AND queued_at < now() - make_interval(secs => $1)
		RETURNING id, attempt`, age.Seconds())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Task])
}

// Job is what a worker needs to send one delivery.
type Job struct {
	ID, SubscriptionID int64
	EventSeq           *int64
	EventType          string
	Status             string
	Queued             bool
	Attempt            int
	CreatedAt          time.Time
	URL                string
	Active             bool
	Secret             []byte
	PreviousSecret     []byte // nil when none or expired
	Data               json.RawMessage
	OccurredAt         time.Time // the event's, or the ping's creation
}

// Job loads a delivery with its subscription and event; ok is false when
// it no longer exists.
func (s *Store) Job(ctx context.Context, id int64) (Job, bool, error) {
	var j Job
	err := s.db.QueryRow(ctx, `SELECT d.id, d.subscription_id, d.event_seq, d.event_type, d.status, d.queued, d.attempt,
			d.created_at, s.url, s.active, s.secret,
			CASE WHEN s.previous_secret_expires_at > now() THEN s.previous_secret END,
			COALESCE(e.data, jsonb_build_object('webhook_id', s.id)), COALESCE(e.occurred_at, d.created_at)
		FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id
		LEFT JOIN events e ON e.seq = d.event_seq WHERE d.id = $1`, id).
		Scan(&j.ID, &j.SubscriptionID, &j.EventSeq, &j.EventType, &j.Status, &j.Queued, &j.Attempt,
			&j.CreatedAt, &j.URL, &j.Active, &j.Secret, &j.PreviousSecret, &j.Data, &j.OccurredAt)
	if db.IsNoRows(err) {
		return j, false, nil
	}
	return j, err == nil, err
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

// Record stores the outcome of attempt number attempt+1 and releases the
// worker slot. It applies only while the delivery is still that attempt
// and queued (a duplicate task's late answer changes nothing).
func (s *Store) Record(ctx context.Context, t Task, o Outcome) (bool, error) {
	applied := false
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var subID int64
		next := &o.NextAttemptAt
		if o.Status != "pending" {
			next = nil
		}
		err := tx.QueryRow(ctx, `UPDATE deliveries SET status = $3, attempt = attempt + 1, status_code = $4,
				duration_ms = $5, error = $6, response_body = $7, next_attempt_at = COALESCE($8, next_attempt_at),
				last_attempt_at = now(), queued = false, queued_at = NULL
			WHERE id = $1 AND attempt = $2 AND queued RETURNING subscription_id`,
			t.ID, t.Attempt, o.Status, o.StatusCode, o.DurationMS, o.Error, o.Body, next).Scan(&subID)
		if db.IsNoRows(err) {
			return nil
		}
		if err != nil {
			return err
		}
		applied = true
		if o.Disable != "" {
			_, err = tx.Exec(ctx, `UPDATE subscriptions SET active = false, disabled_reason = $2, updated_at = now()
				WHERE id = $1`, subID, o.Disable)
		}
		return err
	})
	return applied, err
}
