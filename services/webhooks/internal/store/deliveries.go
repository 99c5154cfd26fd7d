package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/list/listsql"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/services/webhooks/internal/webhooks"
)

const deliveryColumns = `id, subscription_id, event_seq, event_type, status, attempt, status_code, duration_ms,
	error, response_body, next_attempt_at, last_attempt_at, created_at`

func scanDelivery(row pgx.CollectableRow) (webhooks.Delivery, error) {
	var d webhooks.Delivery
	var seq *int64
	var next time.Time
	err := row.Scan(&d.ID, &d.WebhookID, &seq, &d.EventType, &d.Status, &d.Attempt, &d.StatusCode, &d.DurationMS,
		&d.Error, &d.ResponseBody, &next, &d.LastAttemptAt, &d.CreatedAt)
	if seq != nil {
		d.EventID = webhooks.EventID(*seq)
	} else {
		d.EventID = webhooks.PingID(d.ID)
	}
	if d.Status == webhooks.StatusPending {
		d.NextAttemptAt = timestamp.Ptr(&next)
	}
	return d, err
}

// Deliveries returns one page of a subscription's delivery log in f's
// order, optionally of one status (f.Status); webhooks.ErrNotFound when
// the subscription is absent.
func (s *Store) Deliveries(ctx context.Context, subID int64, f webhooks.DeliveryFilter) ([]webhooks.Delivery, int, error) {
	if _, err := s.Get(ctx, subID); err != nil {
		return nil, 0, err
	}
	var w listsql.Where
	w.And("subscription_id = " + w.Arg(subID))
	if f.Status != "" {
		w.And("status = " + w.Arg(f.Status))
	}
	var total int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM deliveries `+w.SQL(), w.Args()...).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.db.Query(ctx, `SELECT `+deliveryColumns+` FROM deliveries `+w.SQL()+` `+DeliverySorts.OrderBy(f.Query)+` `+
		listsql.LimitOffset(&w, f.Query), w.Args()...)
	if err != nil {
		return nil, 0, err
	}
	ds, err := pgx.CollectRows(rows, scanDelivery)
	if err != nil {
		return nil, 0, err
	}
	return ds, total, s.withAttempts(ctx, ds)
}

// withAttempts fills in the attempts of ds, oldest first, in one query for
// the whole page.
func (s *Store) withAttempts(ctx context.Context, ds []webhooks.Delivery) error {
	ids := make([]int64, len(ds))
	byID := make(map[int64]*webhooks.Delivery, len(ds))
	for i := range ds {
		ds[i].Attempts = []webhooks.DeliveryAttempt{}
		ids[i] = ds[i].ID
		byID[ds[i].ID] = &ds[i]
	}
	if len(ds) == 0 {
		return nil
	}
	rows, err := s.db.Query(ctx, `SELECT delivery_id, attempt, status_code, error, duration_ms, response_body, attempted_at
		FROM delivery_attempts WHERE delivery_id = ANY($1) ORDER BY delivery_id, attempt`, ids)
	if err != nil {
		return err
	}
	var id int64
	var a webhooks.DeliveryAttempt
	_, err = pgx.ForEachRow(rows, []any{&id, &a.Attempt, &a.StatusCode, &a.Error, &a.DurationMS, &a.ResponseBody, &a.AttemptedAt}, func() error {
		d := byID[id]
		d.Attempts = append(d.Attempts, a)
		a = webhooks.DeliveryAttempt{} // the next row's pointers are its own
		return nil
	})
	return err
}

// withAttemptsOne is withAttempts for a single delivery.
func (s *Store) withAttemptsOne(ctx context.Context, d webhooks.Delivery, err error) (webhooks.Delivery, error) {
	if err != nil {
		return d, err
	}
	ds := []webhooks.Delivery{d}
	err = s.withAttempts(ctx, ds)
	return ds[0], err
}

// Delivery returns one delivery of a subscription;
// webhooks.ErrDeliveryNotFound otherwise.
func (s *Store) Delivery(ctx context.Context, subID, id int64) (webhooks.Delivery, error) {
	rows, err := s.db.Query(ctx, `SELECT `+deliveryColumns+` FROM deliveries WHERE id = $1 AND subscription_id = $2`, id, subID)
	if err != nil {
		return webhooks.Delivery{}, err
	}
	d, err := pgx.CollectExactlyOneRow(rows, scanDelivery)
	if db.IsNoRows(err) {
		return d, webhooks.ErrDeliveryNotFound
	}
	return s.withAttemptsOne(ctx, d, err)
}

// Retry makes a delivery of the subscription pending and due now. One
// already handed to a worker is left as it is (its attempt is under way).
func (s *Store) Retry(ctx context.Context, subID, id int64) (webhooks.Delivery, error) {
	rows, err := s.db.Query(ctx, `UPDATE deliveries SET status = 'pending', next_attempt_at = now()
		WHERE id = $1 AND subscription_id = $2
			AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.subscription_id = $2 AND $1 = ANY(b.deliveries))
		RETURNING `+deliveryColumns, id, subID)
	if err != nil {
		return webhooks.Delivery{}, err
	}
	d, err := pgx.CollectExactlyOneRow(rows, scanDelivery)
	if db.IsNoRows(err) {
		return s.Delivery(ctx, subID, id)
	}
	return s.withAttemptsOne(ctx, d, err)
}

// NewPing records a ping delivery to the subscription in a batch of its
// own (it is sent at once by the caller, never by the dispatcher; the
// sweeper sends it if the caller dies first) and returns that batch.
func (s *Store) NewPing(ctx context.Context, subID int64) (Batch, error) {
	rows, err := s.db.Query(ctx, `WITH d AS (
			INSERT INTO deliveries (subscription_id, event_type, record_key)
			SELECT id, 'ping', 'ping:' || id FROM subscriptions WHERE id = $1
			RETURNING id, subscription_id, attempt
		)
		INSERT INTO batches (subscription_id, deliveries, attempts)
		SELECT subscription_id, ARRAY[id], ARRAY[attempt] FROM d
		RETURNING id, subscription_id, deliveries, attempts`, subID)
	b, err := collectBatches(rows, err)
	if err == nil && len(b) == 0 {
		err = webhooks.ErrNotFound
	}
	if err != nil {
		return Batch{}, err
	}
	return b[0], nil
}
