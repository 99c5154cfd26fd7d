package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
)

// Why a subscription was disabled for its owner (disabled_reason).
const (
	ReasonTokenRevoked     = "owner's access token was revoked"
	ReasonOwnerDeactivated = "owner was deactivated"
	ReasonOwnerNotAdmin    = "owner is no longer an admin"
)

// Owner is a user's state as identity publishes it (a user.* event):
// a person, or the service user of an integration token (deactivated when
// the token is revoked).
type Owner struct {
	ID        int64
	Active    bool
	Admin     bool
	UpdatedAt time.Time
}

// ApplyOwner records o unless a newer state of that user is recorded, and
// disables what the owner may no longer have: every subscription of an
// inactive owner (a revoked token's, a deactivated user's), and the
// subscriptions a person made as an admin (owner_scopes NULL) once an
// admin is no longer one. Disabled subscriptions get no new deliveries and
// the dispatcher hands out none of their pending ones. A demotion is
// acted on only as a change from an admin state recorded here: an owner
// first heard of as a non-admin may own older subscriptions made by a
// token (also with NULL scopes) that must keep running. It returns how
// many subscriptions it disabled.
func (s *Store) ApplyOwner(ctx context.Context, o Owner) (int, error) {
	disabled := 0
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := ownerLock(ctx, tx, o.ID); err != nil {
			return err
		}
		var wasAdmin bool
		var prev time.Time
		err := tx.QueryRow(ctx, `SELECT admin, updated_at FROM subscription_owners WHERE id = $1`, o.ID).Scan(&wasAdmin, &prev)
		known := err == nil
		if err != nil && !db.IsNoRows(err) {
			return err
		}
		if known && prev.After(o.UpdatedAt) {
			return nil // a newer state was applied already
		}
		if _, err := tx.Exec(ctx, `INSERT INTO subscription_owners (id, active, admin, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (id) DO UPDATE SET active = EXCLUDED.active, admin = EXCLUDED.admin, updated_at = EXCLUDED.updated_at`,
			o.ID, o.Active, o.Admin, o.UpdatedAt); err != nil {
			return err
		}
		var sql string
		var args []any
		switch {
		case !o.Active:
			sql = `UPDATE subscriptions SET active = false, updated_at = now(),
				disabled_reason = CASE WHEN owner_scopes IS NULL THEN $2 ELSE $3 END
				WHERE created_by = $1 AND active`
			args = []any{o.ID, ReasonOwnerDeactivated, ReasonTokenRevoked}
		case known && wasAdmin && !o.Admin:
			sql = `UPDATE subscriptions SET active = false, updated_at = now(), disabled_reason = $2
				WHERE created_by = $1 AND active AND owner_scopes IS NULL`
			args = []any{o.ID, ReasonOwnerNotAdmin}
		default:
			return nil
		}
		tag, err := tx.Exec(ctx, sql, args...)
		disabled = int(tag.RowsAffected())
		return err
	})
	return disabled, err
}
