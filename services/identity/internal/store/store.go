// Package store is identity's PostgreSQL storage. Every write that other
// contexts care about records its event with pkg/outbox in the same
// transaction, so the read models never miss a change nor see one that was
// rolled back.
package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

// Store implements identity.Store on PostgreSQL.
type Store struct {
	db *db.DB
}

var _ identity.Store = (*Store)(nil)

// New returns a store on d.
func New(d *db.DB) *Store { return &Store{db: d} }

// xactLock takes a transaction-scoped advisory lock of this context.
func xactLock(ctx context.Context, tx pgx.Tx, name string) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", db.LockKey("crm-identity:"+name)); err != nil {
		return fmt.Errorf("advisory lock %s: %w", name, err)
	}
	return nil
}
