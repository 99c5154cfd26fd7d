package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

var _ contacts.BatchStore = (*Store)(nil)

// writes are one batch's writes inside its transaction: the single
// writes' own statements, so each publishes its event.
type writes struct {
	ctx context.Context
	tx  pgx.Tx
}

func (w writes) CreateContact(c contacts.Contact) (contacts.Contact, error) {
	return insertContact(w.ctx, w.tx, c)
}

func (w writes) UpdateContact(id int64, apply func(*contacts.Contact) error) (contacts.Contact, bool, error) {
	return updateContact(w.ctx, w.tx, id, apply, true)
}

func (w writes) DeleteContact(id int64) error { return deleteContact(w.ctx, w.tx, id) }

func (w writes) CreateCompany(c contacts.Company) (contacts.Company, error) {
	return insertCompany(w.ctx, w.tx, c)
}

func (w writes) UpdateCompany(id int64, apply func(*contacts.Company) error) (contacts.Company, bool, error) {
	return updateCompany(w.ctx, w.tx, id, apply, true)
}

func (w writes) DeleteCompany(id int64) error { return deleteCompany(w.ctx, w.tx, id) }

// batch runs fn in one transaction, at most once per key.
func batch[R any](ctx context.Context, s *Store, key string, request any,
	fn func(contacts.Writes) ([]contacts.Result[R], error)) (idempotency.Done[[]contacts.Result[R]], error) {
	return idempotency.Once(ctx, s.db, key, request, func(tx pgx.Tx) ([]contacts.Result[R], error) {
		return fn(writes{ctx: ctx, tx: tx})
	})
}

// ContactBatch runs a batch of contact writes in one transaction.
func (s *Store) ContactBatch(ctx context.Context, key string, request any,
	fn func(contacts.Writes) ([]contacts.Result[contacts.Contact], error)) (idempotency.Done[[]contacts.Result[contacts.Contact]], error) {
	return batch(ctx, s, key, request, fn)
}

// CompanyBatch runs a batch of company writes in one transaction.
func (s *Store) CompanyBatch(ctx context.Context, key string, request any,
	fn func(contacts.Writes) ([]contacts.Result[contacts.Company], error)) (idempotency.Done[[]contacts.Result[contacts.Company]], error) {
	return batch(ctx, s, key, request, fn)
}

// Lookup finds the record of object holding value of the unique field d.
func (s *Store) Lookup(ctx context.Context, object string, d customfield.Definition, value string) (int64, bool, error) {
	return customfield.Lookup(ctx, s.db, object, d, value)
}

// CompaniesByDomain matches domains case-insensitively and exactly.
func (s *Store) CompaniesByDomain(ctx context.Context, domain string) ([]contacts.Company, error) {
	rows, err := s.db.Query(ctx, `SELECT `+companyCols+` FROM companies WHERE lower(domain) = lower($1) ORDER BY id`, domain)
	if err != nil {
		return nil, err
	}
	list, err := collect(rows, scanCompany)
	if err != nil {
		return nil, err
	}
	return list, s.renderCompanyList(ctx, list)
}
