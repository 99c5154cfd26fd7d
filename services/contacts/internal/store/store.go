// Package store is the PostgreSQL implementation of contacts.Store. Every
// write records its event in the outbox inside the same transaction, so an
// event exists exactly when the change committed.
package store

import (
	"context"
	"errors"
	"log/slog"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// Stream is the contacts context's event stream.
var Stream = outbox.Stream("contacts")

// Store implements contacts.Store and contacts.IdempotentStore.
type Store struct {
	db    *db.DB
	users *directory.Users
	log   *slog.Logger // background work after a response (index cleanup)
	// listMode is how the list's statements run, unnamed when zero; only
	// BenchmarkListStatements sets it (see planned).
	listMode pgx.QueryExecMode
	// fewMatches overrides listsql.FewMatches when set; tests use it to
	// take either page strategy on a small table.
	fewMatches int
	// searchWalked, when set, hears the outcome of each search's walk
	// (searched): whether it found the page. Tests use it to tell the
	// walk from one pass over the matches, which answer alike.
	searchWalked func(found bool)
}

// New wraps a pool opened on the contacts schema; users answers whether an
// assignee exists (the read model, then identity). Background work logs
// through slog.Default(), which main sets to the service's logger.
func New(d *db.DB, users *directory.Users) (*Store, error) {
	if d == nil || users == nil {
		return nil, errors.New("store: db and users are required")
	}
	return &Store{db: d, users: users, log: slog.Default()}, nil
}

var (
	_ contacts.Store           = (*Store)(nil)
	_ contacts.IdempotentStore = (*Store)(nil)
)

func idStr(id int64) string { return strconv.FormatInt(id, 10) }

// refErr turns a foreign key failure (company deleted since validation)
// into the invalid company_id the client would have got a moment earlier.
func refErr(err error) error {
	if db.IsForeignKeyViolation(err, "") {
		return fault.Invalid("company_id", "does not exist")
	}
	return err
}

func one[T any](q db.Querier, ctx context.Context, scan pgx.RowToFunc[T], notFound string, sql string, args ...any) (T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := pgx.CollectExactlyOneRow(rows, scan)
	if db.IsNoRows(err) {
		return v, fault.NotFound(notFound)
	}
	return v, err
}

// inTx runs fn in a transaction and returns its value.
func inTx[T any](ctx context.Context, d *db.DB, fn func(tx pgx.Tx) (T, error)) (T, error) {
	var v T
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		v, err = fn(tx)
		return err
	})
	return v, err
}

// insertOnce runs insert at most once per key and keeps the record it
// created with the key (pkg/idempotency): a retry with the same record
// gets the stored one back. rec is also the request's fingerprint, as it
// was when the answer itself was stored, so keys stored then still match.
func insertOnce[T any](ctx context.Context, d *db.DB, key string, rec T,
	insert func(context.Context, pgx.Tx, T) (T, error)) (idempotency.Done[T], error) {
	return idempotency.Once(ctx, d, key, rec, func(tx pgx.Tx) (T, error) { return insert(ctx, tx, rec) })
}

// exists reports whether table holds a row with id.
func (s *Store) exists(ctx context.Context, table string, id int64) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+table+` WHERE id = $1)`, id).Scan(&ok)
	return ok, err
}

// collect reads every row with scan; no rows is an empty list (JSON []),
// never nil.
func collect[T any](rows pgx.Rows, scan pgx.RowToFunc[T]) ([]T, error) {
	list, err := pgx.CollectRows(rows, scan)
	if list == nil {
		list = []T{}
	}
	return list, err
}
