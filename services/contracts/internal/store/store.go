// Package store is the PostgreSQL implementation of contracts.Store.
package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// ChunkSize is the size of one stored piece of a signed copy: large
// enough for few round trips, small enough that streaming stays cheap.
const ChunkSize = 1 << 20

// Store implements contracts.Store.
type Store struct {
	db *db.DB
	// lockWait bounds each row-lock wait of the expiry run's final pass.
	lockWait time.Duration
}

var _ contracts.Store = (*Store)(nil)

// New returns a store on d.
func New(d *db.DB) *Store { return &Store{db: d, lockWait: DefaultExpiryLockWait} }

// DefaultExpiryLockWait is how long the expiry run's final pass waits for
// one row lock before it gives up and asks for a retry (ErrDueLocked).
const DefaultExpiryLockWait = 2 * time.Second

// WithExpiryLockWait sets the final pass's lock wait (tests shorten it).
func (s *Store) WithExpiryLockWait(d time.Duration) *Store {
	s.lockWait = d
	return s
}

// one runs a query for exactly one row: no row is a not_found fault
// naming what, any other failure is wrapped as "get <what>".
func one[T any](ctx context.Context, q db.Querier, scan pgx.RowToFunc[T], what, sql string, args ...any) (T, error) {
	var zero T
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return zero, fmt.Errorf("get %s: %w", what, err)
	}
	v, err := pgx.CollectExactlyOneRow(rows, scan)
	if db.IsNoRows(err) {
		return zero, fault.NotFound(what)
	}
	if err != nil {
		return zero, fmt.Errorf("get %s: %w", what, err)
	}
	return v, nil
}
