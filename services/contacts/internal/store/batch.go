package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

var _ contacts.BatchStore = (*Store)(nil)

// writes are one batch's writes inside its transaction: each records
// its events as the single writes do. The contacts' definitions are held
// once per transaction (the first write takes them), not once per record.
type writes struct {
	ctx      context.Context
	tx       pgx.Tx
	contacts []customfield.Definition // held, once a contact write ran
}

// contactDefs holds the contacts' definitions for the batch's transaction.
func (w *writes) contactDefs() ([]customfield.Definition, error) {
	if w.contacts != nil {
		return w.contacts, nil
	}
	defs, err := hold(w.ctx, w.tx, propertyapi.Contacts)
	w.contacts = defs
	return defs, err
}

func (w *writes) CreateContacts(cs []contacts.Contact) ([]contacts.Contact, int, error) {
	defs, err := w.contactDefs()
	if err != nil {
		return nil, -1, err
	}
	return insertContacts(w.ctx, w.tx, defs, cs)
}

func (w *writes) UpdateContact(id int64, apply func(*contacts.Contact) error) (contacts.Contact, bool, error) {
	defs, err := w.contactDefs()
	if err != nil {
		return contacts.Contact{}, false, err
	}
	return updateContact(w.ctx, w.tx, defs, id, apply, true)
}

func (w *writes) DeleteContact(id int64) error { return deleteContact(w.ctx, w.tx, id) }

// CreateCompanies creates the companies one by one (a batch of companies
// is not yet written batch-shaped).
func (w *writes) CreateCompanies(cs []contacts.Company) ([]contacts.Company, int, error) {
	out := make([]contacts.Company, len(cs))
	for i, c := range cs {
		created, err := insertCompany(w.ctx, w.tx, c)
		if err != nil {
			return nil, i, err
		}
		out[i] = created
	}
	return out, -1, nil
}

func (w *writes) UpdateCompany(id int64, apply func(*contacts.Company) error) (contacts.Company, bool, error) {
	return updateCompany(w.ctx, w.tx, id, apply, true)
}

func (w *writes) DeleteCompany(id int64) error { return deleteCompany(w.ctx, w.tx, id) }

// batch runs fn in one transaction, at most once per key.
func batch[R any](ctx context.Context, s *Store, key string, request any,
	fn func(contacts.Writes) ([]contacts.Result[R], error)) (idempotency.Done[[]contacts.Result[R]], error) {
	return idempotency.Once(ctx, s.db, key, request, func(tx pgx.Tx) ([]contacts.Result[R], error) {
		return fn(&writes{ctx: ctx, tx: tx})
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

// LookupMany finds the records of object holding each of values of the
// unique field d, with one statement.
func (s *Store) LookupMany(ctx context.Context, object string, d customfield.Definition, values []string) (map[string]int64, error) {
	return customfield.LookupMany(ctx, s.db, object, d, values)
}

// ContactIDsByEmail finds, with one statement, the ids of the contacts
// holding each of emails (lower-cased: matched as ContactsByEmail matches
// one), ascending.
func (s *Store) ContactIDsByEmail(ctx context.Context, emails []string) (map[string][]int64, error) {
	return idsBy(ctx, s, `SELECT lower(email), id FROM contacts WHERE lower(email) = ANY($1) AND `+anyStatus+` ORDER BY id`, emails)
}

// CompanyIDsByDomain is ContactIDsByEmail for companies' domains.
func (s *Store) CompanyIDsByDomain(ctx context.Context, domains []string) (map[string][]int64, error) {
	return idsBy(ctx, s, `SELECT lower(domain), id FROM companies WHERE lower(domain) = ANY($1) ORDER BY id`, domains)
}

// idsBy groups the (key, id) rows sql reads for keys by key.
func idsBy(ctx context.Context, s *Store, sql string, keys []string) (map[string][]int64, error) {
	out := map[string][]int64{}
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := s.db.Query(ctx, sql, keys)
	if err != nil {
		return nil, err
	}
	var key string
	var id int64
	_, err = pgx.ForEachRow(rows, []any{&key, &id}, func() error {
		out[key] = append(out[key], id)
		return nil
	})
	return out, err
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
