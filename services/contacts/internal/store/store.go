// Package store is the PostgreSQL implementation of contacts.Store. Every
// write records its event in the outbox inside the same transaction, so an
// event exists exactly when the change committed.
package store

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/listq"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// Stream is the contacts context's event stream.
var Stream = outbox.Stream("contacts")

// Store implements contacts.Store and contacts.IdempotentStore.
type Store struct{ db *db.DB }

// New wraps a pool opened on the contacts schema.
func New(d *db.DB) (*Store, error) {
	if d == nil {
		return nil, errors.New("store: db is required")
	}
	return &Store{db: d}, nil
}

var (
	_ contacts.Store           = (*Store)(nil)
	_ contacts.IdempotentStore = (*Store)(nil)
)

const contactCols = `id, first_name, last_name, email, phone, mobile, job_title, company_id, company_name,
	address_street, address_city, address_state, address_zip, address_country, notes, tags, status, source,
	assigned_to, created_at, updated_at`

// contactJSON builds a contact's API JSON in SQL, for events of bulk
// writes (import, company unlink) that never pass through Go structs.
const contactJSON = `jsonb_build_object('id', id, 'first_name', first_name, 'last_name', last_name,
	'email', email, 'phone', phone, 'mobile', mobile, 'job_title', job_title, 'company_id', company_id,
	'company_name', company_name, 'address_street', address_street, 'address_city', address_city,
	'address_state', address_state, 'address_zip', address_zip, 'address_country', address_country,
	'notes', notes, 'tags', tags, 'status', status, 'source', source, 'assigned_to', assigned_to,
	'created_at', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
	'updated_at', to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))`

func scanContact(row pgx.CollectableRow) (contacts.Contact, error) {
	var c contacts.Contact
	err := row.Scan(&c.ID, &c.FirstName, &c.LastName, &c.Email, &c.Phone, &c.Mobile, &c.JobTitle,
		&c.CompanyID, &c.CompanyName, &c.AddressStreet, &c.AddressCity, &c.AddressState, &c.AddressZip,
		&c.AddressCountry, &c.Notes, &c.Tags, &c.Status, &c.Source, &c.AssignedTo,
		&c.CreatedAt.Time, &c.UpdatedAt.Time)
	return c, err
}

const companyCols = `id, name, domain, website, phone, industry, address_street, address_city, address_state,
	address_zip, address_country, created_at, updated_at`

const companyJSON = `jsonb_build_object('id', id, 'name', name, 'domain', domain, 'website', website,
	'phone', phone, 'industry', industry, 'address_street', address_street, 'address_city', address_city,
	'address_state', address_state, 'address_zip', address_zip, 'address_country', address_country,
	'created_at', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
	'updated_at', to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))`

func scanCompany(row pgx.CollectableRow) (contacts.Company, error) {
	var c contacts.Company
	err := row.Scan(&c.ID, &c.Name, &c.Domain, &c.Website, &c.Phone, &c.Industry, &c.AddressStreet,
		&c.AddressCity, &c.AddressState, &c.AddressZip, &c.AddressCountry, &c.CreatedAt.Time, &c.UpdatedAt.Time)
	return c, err
}

func idStr(id int64) string { return strconv.FormatInt(id, 10) }

// refErr turns a foreign key failure (company deleted since validation)
// into the 422 the client would have got a moment earlier.
func refErr(err error) error {
	if db.IsForeignKeyViolation(err, "") {
		return problem.Invalid("company_id", "does not exist")
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
		return v, problem.NotFound(notFound)
	}
	return v, err
}

// ContactExists reports whether id is a stored contact.
func (s *Store) ContactExists(ctx context.Context, id int64) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM contacts WHERE id = $1)`, id).Scan(&ok)
	return ok, err
}

// CompanyExists reports whether id is a stored company.
func (s *Store) CompanyExists(ctx context.Context, id int64) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM companies WHERE id = $1)`, id).Scan(&ok)
	return ok, err
}

// UserExists checks the directory read model.
func (s *Store) UserExists(ctx context.Context, id int64) (bool, error) {
	return directory.UserExists(ctx, s.db, id)
}

// UserTeam returns the user's team from the read model (nil when none).
func (s *Store) UserTeam(ctx context.Context, id int64) (*int64, error) {
	var team *int64
	err := s.db.QueryRow(ctx, `SELECT team_id FROM directory_users WHERE id = $1`, id).Scan(&team)
	if db.IsNoRows(err) {
		return nil, nil
	}
	return team, err
}

// GetContact reads one contact.
func (s *Store) GetContact(ctx context.Context, id int64) (contacts.Contact, error) {
	return one(s.db, ctx, scanContact, "contact", `SELECT `+contactCols+` FROM contacts WHERE id = $1`, id)
}

func insertContact(ctx context.Context, q db.Querier, c contacts.Contact) (contacts.Contact, error) {
	created, err := one(q, ctx, scanContact, "contact", `INSERT INTO contacts (first_name, last_name, email, phone,
		mobile, job_title, company_id, address_street, address_city, address_state, address_zip, address_country,
		notes, tags, status, source, assigned_to)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
		RETURNING `+contactCols,
		c.FirstName, c.LastName, c.Email, c.Phone, c.Mobile, c.JobTitle, c.CompanyID, c.AddressStreet,
		c.AddressCity, c.AddressState, c.AddressZip, c.AddressCountry, c.Notes, c.Tags, c.Status, c.Source, c.AssignedTo)
	if err != nil {
		return created, refErr(err)
	}
	return created, outbox.Add(ctx, q, Stream, contacts.ContactCreated, idStr(created.ID), created)
}

// CreateContact inserts a contact and its event.
func (s *Store) CreateContact(ctx context.Context, c contacts.Contact) (contacts.Contact, error) {
	var created contacts.Contact
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		created, err = insertContact(ctx, tx, c)
		return err
	})
	return created, err
}

// CreateContactOnce inserts a contact at most once per key; the answer is
// the internal API's {"data": contact}.
func (s *Store) CreateContactOnce(ctx context.Context, key string, c contacts.Contact) (idempotency.Result, error) {
	return idempotency.Run(ctx, s.db, key, c, func(tx pgx.Tx) (int, any, error) {
		created, err := insertContact(ctx, tx, c)
		return 201, map[string]any{"data": created}, err
	})
}

// UpdateContact writes every field of c.
func (s *Store) UpdateContact(ctx context.Context, c contacts.Contact) (contacts.Contact, error) {
	var updated contacts.Contact
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		updated, err = one(tx, ctx, scanContact, "contact", `UPDATE contacts SET first_name = $2, last_name = $3,
			email = $4, phone = $5, mobile = $6, job_title = $7, company_id = $8, address_street = $9,
			address_city = $10, address_state = $11, address_zip = $12, address_country = $13, notes = $14,
			tags = $15, status = $16, source = $17, assigned_to = $18, updated_at = now()
			WHERE id = $1 RETURNING `+contactCols,
			c.ID, c.FirstName, c.LastName, c.Email, c.Phone, c.Mobile, c.JobTitle, c.CompanyID, c.AddressStreet,
			c.AddressCity, c.AddressState, c.AddressZip, c.AddressCountry, c.Notes, c.Tags, c.Status, c.Source,
			c.AssignedTo)
		if err != nil {
			return refErr(err)
		}
		return outbox.Add(ctx, tx, Stream, contacts.ContactUpdated, idStr(updated.ID), updated)
	})
	return updated, err
}

// DeleteContact removes the contact, its notes and tasks, and records the
// deleted record as the event.
func (s *Store) DeleteContact(ctx context.Context, id int64) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		deleted, err := one(tx, ctx, scanContact, "contact", `DELETE FROM contacts WHERE id = $1 RETURNING `+contactCols, id)
		if err != nil {
			return err
		}
		if err := activity.DeleteAll(ctx, tx, activity.Contact, id); err != nil {
			return err
		}
		return outbox.Add(ctx, tx, Stream, contacts.ContactDeleted, idStr(id), deleted)
	})
}

// filter builds the WHERE clause shared by the list and the export.
func filter(f contacts.Filter) *listq.Where {
	w := &listq.Where{}
	q := f.Query
	if q.Search != "" {
		w.And("search_text LIKE lower(" + w.Arg("%"+listq.EscapeLike(q.Search)+"%") + ")")
	}
	if f.Status != "" {
		w.And("status = " + w.Arg(f.Status))
	}
	if f.CompanyID != nil {
		w.And("company_id = " + w.Arg(*f.CompanyID))
	}
	if f.AssignedTo != nil {
		w.And("assigned_to = " + w.Arg(*f.AssignedTo))
	}
	if f.Source != "" {
		w.And("source = " + w.Arg(f.Source))
	}
	if q.DateFrom != nil {
		w.And("created_at >= " + w.Arg(*q.DateFrom))
	}
	if q.DateTo != nil {
		w.And("created_at < " + w.Arg(*q.DateTo))
	}
	switch q.Scope {
	case listq.ScopeMe:
		w.And("assigned_to = " + w.Arg(f.Caller))
	case listq.ScopeTeam:
		if f.CallerTeam != nil {
			w.And("assigned_to IN (SELECT id FROM directory_users WHERE team_id = " + w.Arg(*f.CallerTeam) + ")")
		} else {
			// A user without a team is a team of one.
			w.And("assigned_to = " + w.Arg(f.Caller))
		}
	}
	return w
}

// ListContacts returns one page and the total matching rows.
func (s *Store) ListContacts(ctx context.Context, f contacts.Filter) ([]contacts.Contact, int, error) {
	w := filter(f)
	var total int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM contacts `+w.SQL(), w.Args()...).Scan(&total); err != nil {
		return nil, 0, err
	}
	if total == 0 || f.Query.Offset() >= total {
		return []contacts.Contact{}, total, nil
	}
	rows, err := s.db.Query(ctx, `SELECT `+contactCols+` FROM contacts `+w.SQL()+` `+f.Query.OrderBy()+` `+
		f.Query.LimitOffset(w), w.Args()...)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, scanContact)
	return list, total, err
}

// ExportContacts streams the matching contacts in list order. pgx reads
// rows off the wire as they are scanned, so memory stays constant however
// many rows match.
func (s *Store) ExportContacts(ctx context.Context, f contacts.Filter, each func(contacts.Contact) error) error {
	w := filter(f)
	rows, err := s.db.Query(ctx, `SELECT `+contactCols+` FROM contacts `+w.SQL()+` `+f.Query.OrderBy(), w.Args()...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		c, err := scanContact(rows)
		if err != nil {
			return err
		}
		if err := each(c); err != nil {
			return err
		}
	}
	return rows.Err()
}

// ContactsByEmail matches emails case-insensitively and exactly.
func (s *Store) ContactsByEmail(ctx context.Context, email string) ([]contacts.Contact, error) {
	rows, err := s.db.Query(ctx, `SELECT `+contactCols+` FROM contacts WHERE lower(email) = lower($1) ORDER BY id`, email)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, scanContact)
	if list == nil {
		list = []contacts.Contact{}
	}
	return list, err
}

// GetCompany reads one company.
func (s *Store) GetCompany(ctx context.Context, id int64) (contacts.Company, error) {
	return one(s.db, ctx, scanCompany, "company", `SELECT `+companyCols+` FROM companies WHERE id = $1`, id)
}

func insertCompany(ctx context.Context, q db.Querier, c contacts.Company) (contacts.Company, error) {
	created, err := one(q, ctx, scanCompany, "company", `INSERT INTO companies (name, domain, website, phone, industry,
		address_street, address_city, address_state, address_zip, address_country)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING `+companyCols,
		c.Name, c.Domain, c.Website, c.Phone, c.Industry, c.AddressStreet, c.AddressCity, c.AddressState,
		c.AddressZip, c.AddressCountry)
	if err != nil {
		return created, err
	}
	return created, outbox.Add(ctx, q, Stream, contacts.CompanyCreated, idStr(created.ID), created)
}

// CreateCompany inserts a company and its event.
func (s *Store) CreateCompany(ctx context.Context, c contacts.Company) (contacts.Company, error) {
	var created contacts.Company
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		created, err = insertCompany(ctx, tx, c)
		return err
	})
	return created, err
}

// CreateCompanyOnce inserts a company at most once per key.
func (s *Store) CreateCompanyOnce(ctx context.Context, key string, c contacts.Company) (idempotency.Result, error) {
	return idempotency.Run(ctx, s.db, key, c, func(tx pgx.Tx) (int, any, error) {
		created, err := insertCompany(ctx, tx, c)
		return 201, map[string]any{"data": created}, err
	})
}

// UpdateCompany writes every field; the schema's trigger carries a new
// name onto the linked contacts in the same transaction.
func (s *Store) UpdateCompany(ctx context.Context, c contacts.Company) (contacts.Company, error) {
	var updated contacts.Company
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		updated, err = one(tx, ctx, scanCompany, "company", `UPDATE companies SET name = $2, domain = $3, website = $4,
			phone = $5, industry = $6, address_street = $7, address_city = $8, address_state = $9,
			address_zip = $10, address_country = $11, updated_at = now() WHERE id = $1 RETURNING `+companyCols,
			c.ID, c.Name, c.Domain, c.Website, c.Phone, c.Industry, c.AddressStreet, c.AddressCity, c.AddressState,
			c.AddressZip, c.AddressCountry)
		if err != nil {
			return err
		}
		return outbox.Add(ctx, tx, Stream, contacts.CompanyUpdated, idStr(updated.ID), updated)
	})
	return updated, err
}

// DeleteCompany unlinks the company's contacts (each gets a
// contact.updated event) and removes the company.
func (s *Store) DeleteCompany(ctx context.Context, id int64) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
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
		return outbox.Add(ctx, tx, Stream, contacts.CompanyDeleted, idStr(id), deleted)
	})
}

// ListCompanies returns one page of companies (search over name, domain,
// website, phone and industry) and the total.
func (s *Store) ListCompanies(ctx context.Context, q *listq.Query) ([]contacts.Company, int, error) {
	w := &listq.Where{}
	if q.Search != "" {
		w.And("search_text LIKE lower(" + w.Arg("%"+listq.EscapeLike(q.Search)+"%") + ")")
	}
	if q.DateFrom != nil {
		w.And("created_at >= " + w.Arg(*q.DateFrom))
	}
	if q.DateTo != nil {
		w.And("created_at < " + w.Arg(*q.DateTo))
	}
	var total int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM companies `+w.SQL(), w.Args()...).Scan(&total); err != nil {
		return nil, 0, err
	}
	if total == 0 || q.Offset() >= total {
		return []contacts.Company{}, total, nil
	}
	rows, err := s.db.Query(ctx, `SELECT `+companyCols+` FROM companies `+w.SQL()+` `+q.OrderBy()+` `+q.LimitOffset(w), w.Args()...)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, scanCompany)
	return list, total, err
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
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (contacts.CompanyMatch, error) {
		var m contacts.CompanyMatch
		c := &m.Company
		err := row.Scan(&c.ID, &c.Name, &c.Domain, &c.Website, &c.Phone, &c.Industry, &c.AddressStreet,
			&c.AddressCity, &c.AddressState, &c.AddressZip, &c.AddressCountry, &c.CreatedAt.Time, &c.UpdatedAt.Time, &m.Score)
		return m, err
	})
	if list == nil {
		list = []contacts.CompanyMatch{}
	}
	return list, err
}

// PrimaryContact is the company's earliest-created contact, or nil.
func (s *Store) PrimaryContact(ctx context.Context, companyID int64) (*contacts.Contact, error) {
	c, err := one(s.db, ctx, scanContact, "contact", `SELECT `+contactCols+` FROM contacts
		WHERE company_id = $1 ORDER BY created_at, id LIMIT 1`, companyID)
	if errors.Is(err, problem.NotFound("")) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// Import writes the valid rows of a file in one transaction at COPY speed:
// existing emails are skipped, companies are found by case-insensitive
// name or created, rows are copied into a temporary table and moved into
// contacts with one INSERT ... SELECT that also writes their events.
func (s *Store) Import(ctx context.Context, rows []contacts.ImportRow) (int, []contacts.RowError, error) {
	var skipped []contacts.RowError
	imported := 0
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		skipped, imported = nil, 0
		// One import at a time, so two files cannot both add one email.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('contacts.import'))`); err != nil {
			return err
		}
		emails := make([]string, 0, len(rows))
		for _, r := range rows {
			if r.Contact.Email != nil {
				emails = append(emails, strings.ToLower(*r.Contact.Email))
			}
		}
		existing := map[string]bool{}
		if len(emails) > 0 {
			res, err := tx.Query(ctx, `SELECT lower(email) FROM contacts WHERE lower(email) = ANY($1)`, emails)
			if err != nil {
				return err
			}
			found, err := pgx.CollectRows(res, pgx.RowTo[string])
			if err != nil {
				return err
			}
			for _, e := range found {
				existing[e] = true
			}
		}
		keep := rows[:0:0]
		for _, r := range rows {
			if r.Contact.Email != nil && existing[strings.ToLower(*r.Contact.Email)] {
				skipped = append(skipped, contacts.RowError{Row: r.Row, Message: "duplicate email " + *r.Contact.Email + " (already exists)"})
				continue
			}
			keep = append(keep, r)
		}
		companies, err := resolveCompanies(ctx, tx, keep)
		if err != nil {
			return err
		}
		if len(keep) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE import_contacts (
				row int, first_name text, last_name text, email text, phone text, mobile text, job_title text,
				company_id bigint, address_street text, address_city text, address_state text, address_zip text,
				address_country text, notes text, tags text, status text, source text) ON COMMIT DROP`); err != nil {
			return err
		}
		cols := []string{"row", "first_name", "last_name", "email", "phone", "mobile", "job_title", "company_id",
			"address_street", "address_city", "address_state", "address_zip", "address_country", "notes", "tags",
			"status", "source"}
		i := 0
		src := pgx.CopyFromFunc(func() ([]any, error) {
			if i == len(keep) {
				return nil, nil
			}
			r := keep[i]
			c := r.Contact
			i++
			var company *int64
			if r.CompanyName != "" {
				id := companies[strings.ToLower(r.CompanyName)]
				company = &id
			}
			return []any{r.Row, c.FirstName, c.LastName, c.Email, c.Phone, c.Mobile, c.JobTitle, company,
				c.AddressStreet, c.AddressCity, c.AddressState, c.AddressZip, c.AddressCountry, c.Notes, c.Tags,
				c.Status, c.Source}, nil
		})
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"import_contacts"}, cols, src); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `WITH ins AS (
				INSERT INTO contacts (first_name, last_name, email, phone, mobile, job_title, company_id,
					address_street, address_city, address_state, address_zip, address_country, notes, tags, status, source)
				SELECT first_name, last_name, email, phone, mobile, job_title, company_id, address_street,
					address_city, address_state, address_zip, address_country, notes, tags, status, source
				FROM import_contacts ORDER BY row
				RETURNING id, `+contactJSON+` AS payload)
			INSERT INTO outbox (stream, type, aggregate_id, payload)
			SELECT $1, $2, id::text, payload FROM ins ORDER BY id`, Stream, contacts.ContactCreated)
		if err != nil {
			return err
		}
		imported = int(tag.RowsAffected())
		return nil
	})
	return imported, skipped, err
}

// resolveCompanies maps each lower-cased company name of rows to a company
// id, creating (with events) the companies that do not exist yet.
func resolveCompanies(ctx context.Context, tx pgx.Tx, rows []contacts.ImportRow) (map[string]int64, error) {
	ids := map[string]int64{}
	var names, lowers []string
	for _, r := range rows {
		if r.CompanyName == "" {
			continue
		}
		k := strings.ToLower(r.CompanyName)
		if _, ok := ids[k]; ok {
			continue
		}
		ids[k] = 0
		names = append(names, r.CompanyName)
		lowers = append(lowers, k)
	}
	if len(names) == 0 {
		return ids, nil
	}
	res, err := tx.Query(ctx, `SELECT DISTINCT ON (lower(name)) lower(name), id FROM companies
		WHERE lower(name) = ANY($1) ORDER BY lower(name), id`, lowers)
	if err != nil {
		return nil, err
	}
	type pair struct {
		Name string
		ID   int64
	}
	found, err := pgx.CollectRows(res, pgx.RowToStructByPos[pair])
	if err != nil {
		return nil, err
	}
	for _, p := range found {
		ids[p.Name] = p.ID
	}
	var missing []string
	for _, n := range names {
		if ids[strings.ToLower(n)] == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return ids, nil
	}
	res, err = tx.Query(ctx, `WITH ins AS (
			INSERT INTO companies (name) SELECT unnest($1::text[]) RETURNING id, name, `+companyJSON+` AS payload),
		ev AS (INSERT INTO outbox (stream, type, aggregate_id, payload)
			SELECT $2, $3, id::text, payload FROM ins)
		SELECT lower(name), id FROM ins`, missing, Stream, contacts.CompanyCreated)
	if err != nil {
		return nil, err
	}
	created, err := pgx.CollectRows(res, pgx.RowToStructByPos[pair])
	if err != nil {
		return nil, err
	}
	for _, p := range created {
		ids[p.Name] = p.ID
	}
	return ids, nil
}
