// Package store keeps leads in PostgreSQL (schema leads): hand-written SQL,
// every change and its outbox event in one transaction.
package store

import (
	"context"
	"errors"
	"io/fs"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/leads/internal/leads"
	"github.com/opencrm/crm/services/leads/migrations"
)

// MigrationSets lists every migration set the service applies, for test
// database fingerprints.
var MigrationSets = []fs.FS{directory.Migrations, outbox.Migrations, idempotency.Migrations,
	history.Migrations, activity.Migrations, customfield.Migrations, migrations.FS}

// Migrate applies every migration set the service uses, in order: the
// shared components' tables (history before the notes and tasks, which
// track themselves in it), then the leads schema.
func Migrate(ctx context.Context, d *db.DB) error {
	for _, m := range []func(context.Context, *db.DB) error{
		directory.Migrate, outbox.Migrate, idempotency.Migrate, history.Migrate, activity.Migrate, customfield.Migrate,
		func(ctx context.Context, d *db.DB) error { return db.Migrate(ctx, d, "leads", migrations.FS) },
	} {
		if err := m(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// Store implements leads.Store.
type Store struct {
	db    *db.DB
	users *directory.Users
	// fewMatches overrides listsql.FewMatches when set; tests use it to
	// take either page strategy on a small table.
	fewMatches int
	// searchWalked, when set, hears the outcome of each search's walk
	// (searched): whether it found the page. Tests use it to tell the
	// walk from one pass over the matches, which answer alike.
	searchWalked func(found bool)
}

// New returns a store on d; users answers whether an assignee exists (the
// read model, then identity).
func New(d *db.DB, users *directory.Users) (*Store, error) {
	if d == nil || users == nil {
		return nil, errors.New("store: nil database or users")
	}
	return &Store{db: d, users: users}, nil
}

var _ leads.Store = (*Store)(nil)

// DB is the pool, for tests and benchmarks that inspect the schema.
func (s *Store) DB() *db.DB { return s.db }
