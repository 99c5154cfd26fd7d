package store

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/batchapi"
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
	// encoded holds the JSON of each contact created by this batch, by
	// id, as its event carries it: the batch's answer reuses it.
	encoded map[int64][]byte
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
	if w.encoded == nil {
		w.encoded = make(map[int64][]byte, len(cs))
	}
	return insertContacts(w.ctx, w.tx, defs, cs, w.encoded)
}

func (w *writes) UpdateContact(id int64, apply func(*contacts.Contact) error) (contacts.Contact, bool, error) {
	delete(w.encoded, id) // the answer is the contact as updated
	defs, err := w.contactDefs()
	if err != nil {
		return contacts.Contact{}, false, err
	}
	return updateContact(w.ctx, w.tx, defs, id, apply, true)
}

func (w *writes) DeleteContact(id int64) error {
	delete(w.encoded, id)
	return deleteContact(w.ctx, w.tx, id)
}

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

// batch runs fn in one transaction, at most once per key. The answer
// stored for the key (and answered, idempotency.Done.Raw) is
// json.Marshal of fn's results; idOf, when not nil, names the record
// whose JSON the writes already hold (encodeResults).
func batch[R any](ctx context.Context, s *Store, key string, request any, idOf func(*R) int64,
	fn func(contacts.Writes) ([]contacts.Result[R], error)) (idempotency.Done[[]contacts.Result[R]], error) {
	return idempotency.OnceEncoded(ctx, s.db, key, request, func(tx pgx.Tx) ([]contacts.Result[R], []byte, error) {
		w := &writes{ctx: ctx, tx: tx}
		out, err := fn(w)
		if err != nil {
			return nil, nil, err
		}
		raw, err := encodeResults(out, w.encoded, idOf)
		return out, raw, err
	})
}

// encodeResults is json.Marshal(out), byte for byte, taking a created
// record's JSON from encoded (by idOf) rather than encoding it again.
func encodeResults[R any](out []contacts.Result[R], encoded map[int64][]byte, idOf func(*R) int64) ([]byte, error) {
	if out == nil || idOf == nil || len(encoded) == 0 {
		return json.Marshal(out)
	}
	size := 2 + 48*len(out)
	for _, raw := range encoded {
		size += len(raw)
	}
	buf := append(make([]byte, 0, size), '[')
	for i, r := range out {
		if i > 0 {
			buf = append(buf, ',')
		}
		status, err := json.Marshal(r.Status)
		if err != nil {
			return nil, err
		}
		buf = append(append(append(buf, `{"status":`...), status...), `,"record":`...)
		var rec []byte
		held := false
		if r.Record != nil && r.Status == batchapi.Created {
			rec, held = encoded[idOf(r.Record)]
		}
		if !held {
			if rec, err = json.Marshal(r.Record); err != nil {
				return nil, err
			}
		}
		buf = append(append(buf, rec...), '}')
	}
	return append(buf, ']'), nil
}

// ContactBatch runs a batch of contact writes in one transaction.
func (s *Store) ContactBatch(ctx context.Context, key string, request any,
	fn func(contacts.Writes) ([]contacts.Result[contacts.Contact], error)) (idempotency.Done[[]contacts.Result[contacts.Contact]], error) {
	return batch(ctx, s, key, request, func(c *contacts.Contact) int64 { return c.ID }, fn)
}

// CompanyBatch runs a batch of company writes in one transaction.
func (s *Store) CompanyBatch(ctx context.Context, key string, request any,
	fn func(contacts.Writes) ([]contacts.Result[contacts.Company], error)) (idempotency.Done[[]contacts.Result[contacts.Company]], error) {
	return batch(ctx, s, key, request, nil, fn)
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
