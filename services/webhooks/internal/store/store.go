// Package store keeps subscriptions, events and deliveries in PostgreSQL
// (schema webhooks).
package store

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/webhooksapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/list/listsql"
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

// Sorts of the subscriptions' list (the edge sorts by created_at, newest
// first, unless asked).
var Sorts = listsql.Sorts{By: map[string]string{"created_at": "created_at", "id": "id"}, TieBreak: "id"}

// DeliverySorts of a delivery log: ids follow creation, so created_at
// sorts by id.
var DeliverySorts = listsql.Sorts{By: map[string]string{"id": "id", "created_at": "id"}, TieBreak: "id"}

const subColumns = `id, url, events, description, active, disabled_reason, secret_prefix, secret_fingerprint,
	previous_secret_expires_at, created_by, created_at, updated_at, owner_scopes`

// Subscription is a subscription with what the API checks but does not
// show.
type Subscription struct {
	webhooks.Webhook
	// OwnerScopes are the scopes of the integration token that created it;
	// nil for a person with the admin role, who may read every event type.
	OwnerScopes []string
}

func scanSub(row pgx.CollectableRow) (Subscription, error) {
	var w Subscription
	var prevExp *time.Time
	err := row.Scan(&w.ID, &w.URL, &w.Events, &w.Description, &w.Active, &w.DisabledReason, &w.SecretPrefix,
		&w.SecretFingerprint, &prevExp, &w.CreatedBy, &w.CreatedAt, &w.UpdatedAt, &w.OwnerScopes)
	// An expired grace period is not shown.
	if prevExp != nil && prevExp.After(time.Now()) {
		w.PreviousSecretExpiresAt = timestamp.Ptr(prevExp)
	}
	return w, err
}

func one(rows pgx.Rows, err error) (Subscription, error) {
	if err != nil {
		return Subscription{}, err
	}
	w, err := pgx.CollectExactlyOneRow(rows, scanSub)
	if db.IsNoRows(err) {
		return w, webhooks.ErrNotFound
	}
	return w, err
}

// NewSubscription is a validated create.
type NewSubscription struct {
	URL, Description string
	Events           []string
	Active           bool
	Secret           []byte // sealed
	Fingerprint      string
	// CreatedBy is the owner; OwnerScopes its token's scopes (nil for an
	// admin person).
	CreatedBy   *int64
	OwnerScopes []string
}

// ownerLock serialises, per owner, the creates (the cap), activations and
// the handling of the owner's user.* events, so a subscription made or
// re-enabled while its owner loses access is either refused or disabled.
func ownerLock(ctx context.Context, tx pgx.Tx, owner int64) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, db.LockKey("webhooks:owner:"+strconv.FormatInt(owner, 10)))
	return err
}

// lockActiveOwner takes owner's lock and answers webhooks.ErrOwnerGone
// when what webhooks knows of owner says it lost the access a
// subscription with scopes needs (an owner it has heard nothing of has
// not).
func lockActiveOwner(ctx context.Context, tx pgx.Tx, owner int64, scopes []string) error {
	if err := ownerLock(ctx, tx, owner); err != nil {
		return err
	}
	var gone bool
	if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT NOT active OR ($2 AND NOT admin) FROM subscription_owners WHERE id = $1), false)`,
		owner, scopes == nil).Scan(&gone); err != nil {
		return err
	}
	if gone {
		return webhooks.ErrOwnerGone
	}
	return nil
}

// Create stores a subscription: refused with webhooks.ErrOwnerLimit when
// its owner has max already, webhooks.ErrOwnerGone when the owner lost
// access.
func (s *Store) Create(ctx context.Context, n NewSubscription, max int) (Subscription, error) {
	var out Subscription
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		if n.CreatedBy != nil {
			if err := lockActiveOwner(ctx, tx, *n.CreatedBy, n.OwnerScopes); err != nil {
				return err
			}
			var have int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM subscriptions WHERE created_by = $1`, *n.CreatedBy).Scan(&have); err != nil {
				return err
			}
			if have >= max {
				return webhooks.ErrOwnerLimit(max)
			}
		}
		var err error
		out, err = one(tx.Query(ctx, `INSERT INTO subscriptions (url, events, description, active, secret, secret_prefix,
				secret_fingerprint, created_by, owner_scopes)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+subColumns,
			n.URL, n.Events, n.Description, n.Active, n.Secret, webhooksapi.SecretPrefix, n.Fingerprint, n.CreatedBy, n.OwnerScopes))
		if err != nil {
			return err
		}
		return record(ctx, tx, identityapi.AuditWebhookCreated, out.ID, subscribed(out))
	})
	return out, err
}

// Get returns one subscription; webhooks.ErrNotFound when absent.
func (s *Store) Get(ctx context.Context, id int64) (Subscription, error) {
	rows, err := s.db.Query(ctx, `SELECT `+subColumns+` FROM subscriptions WHERE id = $1`, id)
	return one(rows, err)
}

// List returns one page of the subscriptions of f.Owner (every one when
// nil) and their total.
func (s *Store) List(ctx context.Context, f webhooks.Filter) ([]webhooks.Webhook, int, error) {
	var w listsql.Where
	if f.Owner != nil {
		w.And("created_by = " + w.Arg(*f.Owner))
	}
	var total int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM subscriptions `+w.SQL(), w.Args()...).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.db.Query(ctx, `SELECT `+subColumns+` FROM subscriptions `+w.SQL()+` `+Sorts.OrderBy(f.Query)+` `+listsql.LimitOffset(&w, f.Query),
		w.Args()...)
	if err != nil {
		return nil, 0, err
	}
	subs, err := pgx.CollectRows(rows, scanSub)
	out := make([]webhooks.Webhook, len(subs))
	for i, sub := range subs {
		out[i] = sub.Webhook
	}
	return out, total, err
}

// Update replaces the fields sent of cur (as Get returned it). Activating
// clears disabled_reason, and is refused with webhooks.ErrOwnerGone when
// the owner lost access; the owner and its scopes never change, so cur's
// are the subscription's.
func (s *Store) Update(ctx context.Context, cur Subscription, in webhooksapi.WebhookInput) (Subscription, error) {
	var events []string
	if in.Events != nil {
		events = *in.Events
	}
	var out Subscription
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		if in.Active != nil && *in.Active && cur.CreatedBy != nil {
			if err := lockActiveOwner(ctx, tx, *cur.CreatedBy, cur.OwnerScopes); err != nil {
				return err
			}
		}
		var err error
		out, err = one(tx.Query(ctx, `UPDATE subscriptions SET
			url = COALESCE($2, url), events = COALESCE($3, events), description = COALESCE($4, description),
			active = COALESCE($5, active),
			disabled_reason = CASE WHEN $5::boolean IS NULL THEN disabled_reason ELSE NULL END,
			updated_at = now()
			WHERE id = $1 RETURNING `+subColumns, cur.ID, in.URL, events, in.Description, in.Active))
		if err != nil {
			return err
		}
		if changes := subscriptionChanges(cur, out); len(changes) > 0 {
			return record(ctx, tx, identityapi.AuditWebhookUpdated, out.ID, map[string]any{"changes": changes})
		}
		return nil
	})
	return out, err
}

// Delete removes a subscription and its deliveries.
func (s *Store) Delete(ctx context.Context, id int64) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		gone, err := one(tx.Query(ctx, `DELETE FROM subscriptions WHERE id = $1 RETURNING `+subColumns, id))
		if err != nil {
			return err
		}
		return record(ctx, tx, identityapi.AuditWebhookDeleted, id, subscribed(gone))
	})
}

// Rotate makes sealed the current secret; the current one becomes the
// previous, signing alongside for grace.
func (s *Store) Rotate(ctx context.Context, id int64, sealed []byte, fingerprint string, grace time.Duration) (Subscription, error) {
	var out Subscription
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = one(tx.Query(ctx, `UPDATE subscriptions SET previous_secret = secret,
			previous_secret_expires_at = now() + make_interval(secs => $4), secret = $2, secret_prefix = $5,
			secret_fingerprint = $3, updated_at = now()
			WHERE id = $1 RETURNING `+subColumns, id, sealed, fingerprint, grace.Seconds(), webhooksapi.SecretPrefix))
		if err != nil {
			return err
		}
		return record(ctx, tx, identityapi.AuditWebhookRotated, id, map[string]any{"fingerprint": out.SecretFingerprint,
			"grace_seconds": grace.Seconds()})
	})
	return out, err
}

// BackfillFingerprints gives every subscription without a fingerprint
// (made by an earlier version) the fingerprint of its secret, opened with
// open, and clears the key material an earlier version put in
// secret_prefix (a replica of it may still be writing during an upgrade).
// A secret that cannot be opened (CRM_SECRET_KEY changed) is counted in
// failed and left without a fingerprint. A concurrent rotation wins.
func (s *Store) BackfillFingerprints(ctx context.Context, open func(sealed []byte) ([]byte, error)) (filled, failed int, err error) {
	if _, err := s.db.Exec(ctx, `UPDATE subscriptions SET secret_prefix = $1 WHERE secret_prefix <> $1`, webhooksapi.SecretPrefix); err != nil {
		return 0, 0, err
	}
	rows, err := s.db.Query(ctx, `SELECT id, secret FROM subscriptions WHERE secret_fingerprint IS NULL`)
	if err != nil {
		return 0, 0, err
	}
	type row struct {
		ID     int64
		Secret []byte
	}
	todo, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		return 0, 0, err
	}
	for _, r := range todo {
		secret, err := open(r.Secret)
		if err != nil {
			failed++
			continue
		}
		tag, err := s.db.Exec(ctx, `UPDATE subscriptions SET secret_fingerprint = $2 WHERE id = $1 AND secret = $3 AND secret_fingerprint IS NULL`,
			r.ID, webhooks.Fingerprint(string(secret)), r.Secret)
		if err != nil {
			return filled, failed, err
		}
		filled += int(tag.RowsAffected())
	}
	return filled, failed, nil
}
