// Package store keeps subscriptions, events and deliveries in PostgreSQL
// (schema webhooks).
package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/listq"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/services/webhooks/internal/webhooks"
)

// Store is the webhooks schema.
type Store struct{ db *db.DB }

// New returns a store on d.
func New(d *db.DB) (*Store, error) {
	if d == nil {
		return nil, errors.New("store: a database is required")
	}
	return &Store{db: d}, nil
}

// DB is the pool, for the delivery engine's metrics.
func (s *Store) DB() *db.DB { return s.db }

// Sorts of GET /webhooks: newest first by default.
var Sorts = listq.Spec{
	Sorts:       map[string]string{"created_at": "created_at", "id": "id"},
	DefaultSort: "created_at",
	TieBreak:    "id",
}

// DeliverySorts of GET /webhooks/{id}/deliveries: newest first.
var DeliverySorts = listq.Spec{
	Sorts:       map[string]string{"id": "id", "created_at": "id"},
	DefaultSort: "id",
	TieBreak:    "id",
}

var errNotFound = problem.NotFound("webhook")

const subColumns = `id, url, events, description, active, disabled_reason, secret_prefix,
	previous_secret_expires_at, created_by, created_at, updated_at`

func scanSub(row pgx.CollectableRow) (webhooks.Webhook, error) {
	var w webhooks.Webhook
	var prevExp *time.Time
	err := row.Scan(&w.ID, &w.URL, &w.Events, &w.Description, &w.Active, &w.DisabledReason, &w.SecretPrefix,
		&prevExp, &w.CreatedBy, &w.CreatedAt, &w.UpdatedAt)
	// An expired grace period is not shown.
	if prevExp != nil && prevExp.After(time.Now()) {
		w.PreviousSecretExpiresAt = timestamp.Ptr(prevExp)
	}
	return w, err
}

func one(rows pgx.Rows, err error) (webhooks.Webhook, error) {
	if err != nil {
		return webhooks.Webhook{}, err
	}
	w, err := pgx.CollectExactlyOneRow(rows, scanSub)
	if db.IsNoRows(err) {
		return w, errNotFound
	}
	return w, err
}

// NewSubscription is a validated create.
type NewSubscription struct {
	URL, Description string
	Events           []string
	Active           bool
	Secret           []byte // sealed
	SecretPrefix     string
	CreatedBy        *int64
}

// Create stores a subscription.
func (s *Store) Create(ctx context.Context, n NewSubscription) (webhooks.Webhook, error) {
	rows, err := s.db.Query(ctx, `INSERT INTO subscriptions (url, events, description, active, secret, secret_prefix, created_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+subColumns,
		n.URL, n.Events, n.Description, n.Active, n.Secret, n.SecretPrefix, n.CreatedBy)
	return one(rows, err)
}

// Get returns one subscription; 404 when absent.
func (s *Store) Get(ctx context.Context, id int64) (webhooks.Webhook, error) {
	rows, err := s.db.Query(ctx, `SELECT `+subColumns+` FROM subscriptions WHERE id = $1`, id)
	return one(rows, err)
}

// List returns one page of subscriptions and the total.
func (s *Store) List(ctx context.Context, q *listq.Query) ([]webhooks.Webhook, int, error) {
	var w listq.Where
	var total int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM subscriptions`).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.db.Query(ctx, `SELECT `+subColumns+` FROM subscriptions `+q.OrderBy()+` `+q.LimitOffset(&w), w.Args()...)
	if err != nil {
		return nil, 0, err
	}
	subs, err := pgx.CollectRows(rows, scanSub)
	return subs, total, err
}

// Update replaces the fields sent. Activating clears disabled_reason.
func (s *Store) Update(ctx context.Context, id int64, in webhooks.Input) (webhooks.Webhook, error) {
	var events []string
	if in.Events != nil {
		events = *in.Events
	}
	rows, err := s.db.Query(ctx, `UPDATE subscriptions SET
		url = COALESCE($2, url), events = COALESCE($3, events), description = COALESCE($4, description),
		active = COALESCE($5, active),
		disabled_reason = CASE WHEN $5::boolean IS NULL THEN disabled_reason ELSE NULL END,
		updated_at = now()
		WHERE id = $1 RETURNING `+subColumns, id, in.URL, events, in.Description, in.Active)
	return one(rows, err)
}

// Delete removes a subscription and its deliveries.
func (s *Store) Delete(ctx context.Context, id int64) error {
	tag, err := s.db.Exec(ctx, `DELETE FROM subscriptions WHERE id = $1`, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return errNotFound
	}
	return nil
}

// Rotate makes sealed the current secret; the current one becomes the
// previous, signing alongside for grace.
func (s *Store) Rotate(ctx context.Context, id int64, sealed []byte, prefix string, grace time.Duration) (webhooks.Webhook, error) {
	rows, err := s.db.Query(ctx, `UPDATE subscriptions SET previous_secret = secret,
		previous_secret_expires_at = now() + make_interval(secs => $4), secret = $2, secret_prefix = $3, updated_at = now()
		WHERE id = $1 RETURNING `+subColumns, id, sealed, prefix, grace.Seconds())
	return one(rows, err)
}
