// Package store is the PostgreSQL implementation of deals.Store. Money is
// read as text and written as text casts, so no value ever passes through a
// float on its way to or from the database.
package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/deals/internal/deals"
	"github.com/opencrm/crm/services/deals/migrations"
)

// MigrationSets lists every migration set the service applies, for test
// database fingerprints.
var MigrationSets = []fs.FS{migrations.FS, outbox.Migrations, directory.Migrations,
	idempotency.Migrations, customfield.Migrations, history.Migrations}

// Migrate applies every migration set the service uses, in order: record
// history first (migration 007 tracks deals and quotes), the deals schema,
// then the shared components' tables. The binary and the test databases
// share it, so they never drift apart.
func Migrate(ctx context.Context, d *db.DB) error {
	for _, m := range []func(context.Context, *db.DB) error{
		history.Migrate,
		func(ctx context.Context, d *db.DB) error { return db.Migrate(ctx, d, "deals", migrations.FS) },
		outbox.Migrate, directory.Migrate, idempotency.Migrate, customfield.Migrate,
	} {
		if err := m(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// Stream is where deal events go.
var Stream = outbox.Stream("deals")

// Store implements deals.Store.
type Store struct {
	db    *db.DB
	users *directory.Users
}

var _ deals.Store = (*Store)(nil)

// New returns a store on d; users answers whether an assignee exists (the
// read model, then identity).
func New(d *db.DB, users *directory.Users) (*Store, error) {
	if d == nil || users == nil {
		return nil, errors.New("store: nil database or users")
	}
	return &Store{db: d, users: users}, nil
}

func dec(s string) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return d, fmt.Errorf("store: bad numeric %q: %w", s, err)
	}
	return d, nil
}

func one[T any](rows pgx.Rows, err error, scan pgx.RowToFunc[T], what string) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	v, err := pgx.CollectExactlyOneRow(rows, scan)
	if db.IsNoRows(err) {
		return zero, fault.NotFound(what)
	}
	return v, err
}
