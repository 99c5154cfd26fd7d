package store_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/identityapi/identityapitest"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/leads/internal/store"
)

// newStore is a leads store on a fresh database from the migrated
// template, its users read model fed by a fake identity service.
func newStore(t *testing.T) (*db.DB, *store.Store) {
	t.Helper()
	d := testdb.New(t, "leads", store.Migrate, store.MigrationSets...)
	_, idc := identityapitest.NewFake("test-internal-secret-0123456789").Start(t)
	users, err := directory.NewUsers(d, idc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(d, users)
	if err != nil {
		t.Fatal(err)
	}
	return d, st
}
