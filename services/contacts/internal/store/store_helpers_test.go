package store

import (
	"log/slog"
	"testing"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/testdb"
)

// newTestStore is a store on a fresh database from the migrated template.
func newTestStore(t *testing.T) (*db.DB, *Store) {
	t.Helper()
	d := testdb.New(t, Schema, Migrate, MigrationSets...)
	return d, &Store{db: d, log: slog.Default()}
}
