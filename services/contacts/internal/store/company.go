package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/list/listsql"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

const companyCols = `id, name, domain, website, phone, industry, address_street, address_city, address_state,
	address_zip, address_country, created_at, updated_at, custom_fields`

var companyJSON = `jsonb_build_object('id', id, 'name', name, 'domain', domain, 'website', website,
	'phone', phone, 'industry', industry, 'address_street', address_street, 'address_city', address_city,
	'address_state', address_state, 'address_zip', address_zip, 'address_country', address_country,
	'custom_fields', ` + renderSQL(propertyapi.Companies) + `,
	'created_at', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
	'updated_at', to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))`

// companyDest is the scan destination of companyCols.
func companyDest(c *contacts.Company) []any {
	return []any{&c.ID, &c.Name, &c.Domain, &c.Website, &c.Phone, &c.Industry, &c.AddressStreet,
		&c.AddressCity, &c.AddressState, &c.AddressZip, &c.AddressCountry, &c.CreatedAt.Time, &c.UpdatedAt.Time, &c.CustomFields}
}

func scanCompany(row pgx.CollectableRow) (contacts.Company, error) {
	var c contacts.Company
	err := row.Scan(companyDest(&c)...)
	return c, err
}

// GetCompany reads one company.
func (s *Store) GetCompany(ctx context.Context, id int64) (contacts.Company, error) {
	c, err := one(s.db, ctx, scanCompany, "company", `SELECT `+companyCols+` FROM companies WHERE id = $1`, id)
	if err != nil {
		return c, err
	}
	return c, s.renderCompanies(ctx, &c)
}

// insertCompany is insertContact for a company.
func insertCompany(ctx context.Context, tx pgx.Tx, c contacts.Company) (contacts.Company, error) {
	defs, err := hold(ctx, tx, propertyapi.Companies)
	if err != nil {
		return contacts.Company{}, err
	}
	if err := customfield.Recheck(ctx, defs, nil, contacts.Held(c.CustomFields)); err != nil {
		return contacts.Company{}, err
	}
	created, err := one(tx, ctx, scanCompany, "company", `INSERT INTO companies (name, domain, website, phone, industry,
		address_street, address_city, address_state, address_zip, address_country, created_by, custom_fields)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING `+companyCols,
		c.Name, c.Domain, c.Website, c.Phone, c.Industry, c.AddressStreet, c.AddressCity, c.AddressState,
		c.AddressZip, c.AddressCountry, directory.Caller(ctx), contacts.Held(c.CustomFields))
	if err != nil {
		return created, err
	}
	if err := claimed(ctx, tx, defs, propertyapi.Companies, created.ID, &created.CustomFields); err != nil {
		return created, err
	}
	return created, outbox.Add(ctx, tx, Stream, contacts.CompanyCreated, idStr(created.ID), created)
}

// CreateCompany inserts a company and its event.
func (s *Store) CreateCompany(ctx context.Context, c contacts.Company) (contacts.Company, error) {
	return inTx(ctx, s.db, func(tx pgx.Tx) (contacts.Company, error) { return insertCompany(ctx, tx, c) })
}

// CreateCompanyOnce inserts a company at most once per key.
func (s *Store) CreateCompanyOnce(ctx context.Context, key string, c contacts.Company) (idempotency.Done[contacts.Company], error) {
	return insertOnce(ctx, s.db, key, c, insertCompany)
}

// UpdateCompany locks the company, applies the change to the row as
// committed and writes every field back with its event; the schema's
// trigger carries a new name onto the linked contacts in the same
// transaction.
func (s *Store) UpdateCompany(ctx context.Context, id int64, apply func(*contacts.Company) error) (contacts.Company, error) {
	return inTx(ctx, s.db, func(tx pgx.Tx) (contacts.Company, error) {
		c, _, err := updateCompany(ctx, tx, id, apply, false)
		return c, err
	})
}

// updateCompany is updateContact for a company.
func updateCompany(ctx context.Context, tx pgx.Tx, id int64, apply func(*contacts.Company) error, skipUnchanged bool) (c contacts.Company, changed bool, err error) {
	defs, err := hold(ctx, tx, propertyapi.Companies)
	if err != nil {
		return contacts.Company{}, false, err
	}
	c, err = one(tx, ctx, scanCompany, "company", `SELECT `+companyCols+` FROM companies WHERE id = $1`+lockRow, id)
	if err != nil {
		return contacts.Company{}, false, err
	}
	before, err := json.Marshal(c)
	if err != nil {
		return contacts.Company{}, false, err
	}
	old := c.CustomFields
	if err := apply(&c); err != nil {
		return contacts.Company{}, false, err
	}
	if after, err := json.Marshal(c); err != nil {
		return contacts.Company{}, false, err
	} else if skipUnchanged && bytes.Equal(before, after) {
		c.CustomFields = customfield.Render(defs, c.CustomFields)
		return c, false, nil
	}
	if err := customfield.Recheck(ctx, defs, old, contacts.Held(c.CustomFields)); err != nil {
		return contacts.Company{}, false, err
	}
	updated, err := one(tx, ctx, scanCompany, "company", `UPDATE companies SET name = $2, domain = $3, website = $4,
		phone = $5, industry = $6, address_street = $7, address_city = $8, address_state = $9,
		address_zip = $10, address_country = $11, custom_fields = $12, updated_at = now() WHERE id = $1 RETURNING `+companyCols,
		c.ID, c.Name, c.Domain, c.Website, c.Phone, c.Industry, c.AddressStreet, c.AddressCity, c.AddressState,
		c.AddressZip, c.AddressCountry, contacts.Held(c.CustomFields))
	if err != nil {
		return updated, false, err
	}
	if err := claimed(ctx, tx, defs, propertyapi.Companies, updated.ID, &updated.CustomFields); err != nil {
		return updated, false, err
	}
	return updated, true, outbox.Add(ctx, tx, Stream, contacts.CompanyUpdated, idStr(updated.ID), updated)
}

// DeleteCompany unlinks the company's contacts (each gets a
// contact.updated event) and removes the company.
func (s *Store) DeleteCompany(ctx context.Context, id int64) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error { return deleteCompany(ctx, tx, id) })
}

func deleteCompany(ctx context.Context, tx pgx.Tx, id int64) error {
	deleted, err := one(tx, ctx, scanCompany, "company", `SELECT `+companyCols+` FROM companies WHERE id = $1 FOR UPDATE`, id)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `WITH u AS (
			UPDATE contacts SET company_id = NULL, updated_at = now() WHERE company_id = $1
			RETURNING id, `+contactJSON+` AS payload)
		INSERT INTO outbox (stream, type, aggregate_id, payload)
		SELECT $2, $3, id::text, payload FROM u ORDER BY id`, id, Stream, contacts.ContactUpdated); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM companies WHERE id = $1`, id); err != nil {
		return err
	}
	if err := customfield.Release(ctx, tx, propertyapi.Companies, id); err != nil {
		return err
	}
	if err := outbox.Add(ctx, tx, Stream, contacts.CompanyDeleted, idStr(id), outbox.Tombstone(deleted.ID)); err != nil {
		return err
	}
	return auditDeleted(ctx, tx, "company", id)
}

// companySorts maps the company list's sort keys (contacts.CompanySorts)
// to SQL.
var companySorts = listsql.Sorts{
	By:       map[string]string{"name": "lower(name)", "created_at": "created_at", "updated_at": "updated_at"},
	TieBreak: "id",
	Updated:  "updated_at",
}

// ListCompanies returns one page of companies (search over name, domain,
// website, phone and industry) and the total.
func (s *Store) ListCompanies(ctx context.Context, f contacts.CompanyFilter) ([]contacts.Company, int, error) {
	q := f.Query
	sorts := cf.Sorts(companySorts, f.Custom.Sort)
	w := &listsql.Where{}
	if q.Search != "" {
		w.And("search_text LIKE lower(" + w.Arg("%"+listsql.EscapeLike(q.Search)+"%") + ")")
	}
	if q.DateFrom != nil {
		w.And("created_at >= " + w.Arg(*q.DateFrom))
	}
	if q.DateTo != nil {
		w.And("created_at < " + w.Arg(*q.DateTo))
	}
	cf.Where(w, f.Custom.Filters)
	sorts.Since(w, q)
	var total int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM companies `+w.SQL(), w.Args()...).Scan(&total); err != nil {
		return nil, 0, err
	}
	if total == 0 || q.Offset() >= total {
		return []contacts.Company{}, total, nil
	}
	rows, err := s.db.Query(ctx, `SELECT `+companyCols+` FROM companies `+w.SQL()+` `+sorts.OrderBy(q)+` `+listsql.LimitOffset(w, q), w.Args()...)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, scanCompany)
	if err != nil {
		return nil, 0, err
	}
	return list, total, s.renderCompanyList(ctx, list)
}

// MatchCompanies ranks companies by trigram similarity of their folded
// names (norm_name): whole-name similarity, or word similarity when the
// query resembles a part of the name ("ACME inc." finds "Acme, Inc." at 1.0
// and "Acme Holdings International" lower), plus names containing the
// folded query. Both operators are served by the trigram GIN index.
func (s *Store) MatchCompanies(ctx context.Context, name string, limit int) ([]contacts.CompanyMatch, error) {
	rows, err := s.db.Query(ctx, `SELECT `+companyCols+`,
			round(greatest(similarity(name_norm, n), word_similarity(n, name_norm))::numeric, 4)::float8 AS score
		FROM companies, norm_name($1) AS n
		WHERE n <> '' AND (name_norm % n OR n <% name_norm OR name_norm LIKE '%' || n || '%')
		ORDER BY score DESC, id LIMIT $2`, name, limit)
	if err != nil {
		return nil, err
	}
	list, err := collect(rows, func(row pgx.CollectableRow) (contacts.CompanyMatch, error) {
		var m contacts.CompanyMatch
		err := row.Scan(append(companyDest(&m.Company), &m.Score)...)
		return m, err
	})
	if err != nil {
		return nil, err
	}
	ps := make([]*contacts.Company, len(list))
	for i := range list {
		ps[i] = &list[i].Company
	}
	return list, s.renderCompanies(ctx, ps...)
}

// PrimaryContact is the company's earliest-created contact, or nil.
func (s *Store) PrimaryContact(ctx context.Context, companyID int64) (*contacts.Contact, error) {
	c, err := one(s.db, ctx, scanContact, "contact", `SELECT `+contactCols+` FROM contacts
		WHERE company_id = $1 ORDER BY created_at, id LIMIT 1`, companyID)
	if errors.Is(err, fault.NotFound("")) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &c, s.renderContacts(ctx, &c)
}
