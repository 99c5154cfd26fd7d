// Package store is the PostgreSQL implementation of contacts.Store. Every
// write records its event in the outbox inside the same transaction, so an
// event exists exactly when the change committed.
package store

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

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
type Store struct {
	db    *db.DB
	users *directory.Users
	log   *slog.Logger // background work after a response (index cleanup)
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

// companyDest is the scan destination of companyCols.
func companyDest(c *contacts.Company) []any {
	return []any{&c.ID, &c.Name, &c.Domain, &c.Website, &c.Phone, &c.Industry, &c.AddressStreet,
		&c.AddressCity, &c.AddressState, &c.AddressZip, &c.AddressCountry, &c.CreatedAt.Time, &c.UpdatedAt.Time}
}

func scanCompany(row pgx.CollectableRow) (contacts.Company, error) {
	var c contacts.Company
	err := row.Scan(companyDest(&c)...)
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

// insertOnce runs insert at most once per key; the answer is the internal
// API's 201 {"data": record}.
func insertOnce[T any](ctx context.Context, d *db.DB, key string, rec T,
	insert func(context.Context, db.Querier, T) (T, error)) (idempotency.Result, error) {
	return idempotency.Run(ctx, d, key, rec, func(tx pgx.Tx) (int, any, error) {
		created, err := insert(ctx, tx, rec)
		return 201, map[string]any{"data": created}, err
	})
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

// ContactExists reports whether id is a stored contact.
func (s *Store) ContactExists(ctx context.Context, id int64) (bool, error) {
	return s.exists(ctx, "contacts", id)
}

// CompanyExists reports whether id is a stored company.
func (s *Store) CompanyExists(ctx context.Context, id int64) (bool, error) {
	return s.exists(ctx, "companies", id)
}

// UserExists checks the directory read model, and identity on a miss.
func (s *Store) UserExists(ctx context.Context, id int64) (bool, error) {
	return s.users.Exists(ctx, id)
}

// UserTeam returns the user's team from the read model (nil when none).
// ContactOwner returns a contact's assignee and creator.
func (s *Store) ContactOwner(ctx context.Context, id int64) (directory.Owner, error) {
	var o directory.Owner
	err := s.db.QueryRow(ctx, `SELECT assigned_to, created_by FROM contacts WHERE id = $1`, id).Scan(&o.AssignedTo, &o.CreatedBy)
	if db.IsNoRows(err) {
		return o, problem.NotFound("contact")
	}
	return o, err
}

// CompanyOwner returns a company's creator.
func (s *Store) CompanyOwner(ctx context.Context, id int64) (directory.Owner, error) {
	var o directory.Owner
	err := s.db.QueryRow(ctx, `SELECT created_by FROM companies WHERE id = $1`, id).Scan(&o.CreatedBy)
	if db.IsNoRows(err) {
		return o, problem.NotFound("company")
	}
	return o, err
}

// CanWrite decides write access with this schema's user directory.
func (s *Store) CanWrite(ctx context.Context, o directory.Owner) error {
	return directory.CheckWrite(ctx, s.db, o)
}

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
		notes, tags, status, source, assigned_to, created_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
		RETURNING `+contactCols,
		c.FirstName, c.LastName, c.Email, c.Phone, c.Mobile, c.JobTitle, c.CompanyID, c.AddressStreet,
		c.AddressCity, c.AddressState, c.AddressZip, c.AddressCountry, c.Notes, c.Tags, c.Status, c.Source, c.AssignedTo,
		directory.Caller(ctx))
	if err != nil {
		return created, refErr(err)
	}
	return created, outbox.Add(ctx, q, Stream, contacts.ContactCreated, idStr(created.ID), created)
}

// CreateContact inserts a contact and its event.
func (s *Store) CreateContact(ctx context.Context, c contacts.Contact) (contacts.Contact, error) {
	return inTx(ctx, s.db, func(tx pgx.Tx) (contacts.Contact, error) { return insertContact(ctx, tx, c) })
}

// CreateContactOnce inserts a contact at most once per key; the answer is
// the internal API's {"data": contact}.
func (s *Store) CreateContactOnce(ctx context.Context, key string, c contacts.Contact) (idempotency.Result, error) {
	return insertOnce(ctx, s.db, key, c, insertContact)
}

// lockRow is the row lock an update takes before reading the row it
// patches: FOR NO KEY UPDATE, the lock the UPDATE itself takes, so two
// updates of one row run one after the other while inserts and updates of
// rows referencing it (their foreign key checks take KEY SHARE) are not
// held up, and a company update cannot deadlock against a contact update
// that checks its company_id.
const lockRow = ` FOR NO KEY UPDATE`

// UpdateContact locks the contact, applies the change to the row as
// committed and writes every field back with its event.
func (s *Store) UpdateContact(ctx context.Context, id int64, apply func(*contacts.Contact) error) (contacts.Contact, error) {
	return inTx(ctx, s.db, func(tx pgx.Tx) (contacts.Contact, error) {
		c, err := one(tx, ctx, scanContact, "contact", `SELECT `+contactCols+` FROM contacts WHERE id = $1`+lockRow, id)
		if err != nil {
			return contacts.Contact{}, err
		}
		if err := apply(&c); err != nil {
			return contacts.Contact{}, err
		}
		updated, err := one(tx, ctx, scanContact, "contact", `UPDATE contacts SET first_name = $2, last_name = $3,
			email = $4, phone = $5, mobile = $6, job_title = $7, company_id = $8, address_street = $9,
			address_city = $10, address_state = $11, address_zip = $12, address_country = $13, notes = $14,
			tags = $15, status = $16, source = $17, assigned_to = $18, updated_at = now()
			WHERE id = $1 RETURNING `+contactCols,
			c.ID, c.FirstName, c.LastName, c.Email, c.Phone, c.Mobile, c.JobTitle, c.CompanyID, c.AddressStreet,
			c.AddressCity, c.AddressState, c.AddressZip, c.AddressCountry, c.Notes, c.Tags, c.Status, c.Source,
			c.AssignedTo)
		if err != nil {
			return updated, refErr(err)
		}
		return updated, outbox.Add(ctx, tx, Stream, contacts.ContactUpdated, idStr(updated.ID), updated)
	})
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
		return outbox.Add(ctx, tx, Stream, contacts.ContactDeleted, idStr(id), outbox.Tombstone(deleted.ID))
	})
}

// searchCond is the substring search: the contact's own fields through
// the trigram index on search_text, OR the contact's company when the
// company's name matches (company ids from the small companies table's
// trigram index). company_name is not part of search_text, so a term
// shared by many company names ("company 7") no longer makes the trigram
// index return most contacts; the planner combines both as a BitmapOr.
func searchCond(w *listq.Where, search string) string {
	p := w.Arg("%" + listq.EscapeLike(search) + "%")
	return "(search_text LIKE lower(" + p + ") OR company_id = ANY(ARRAY(SELECT id FROM companies WHERE lower(name) LIKE lower(" + p + "))))"
}

// filter builds the WHERE clause shared by the list and the export.
func filter(f contacts.Filter) *listq.Where {
	w := &listq.Where{}
	q := f.Query
	if q.Search != "" {
		w.And(searchCond(w, q.Search))
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
	q.Since(w)
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

// counted returns the contact_counts query answering the exact total of
// f, when f is at most one equality filter the counters are kept for
// (status, source, company_id, assigned_to, scope=me, scope=team) and no
// search or date range; ok is false otherwise.
func counted(f contacts.Filter) (sql string, args []any, ok bool) {
	q := f.Query
	if q.Search != "" || q.DateFrom != nil || q.DateTo != nil || q.UpdatedSince != nil {
		return "", nil, false
	}
	type key struct {
		dim, val string
	}
	var keys []key
	team := false
	if f.Status != "" {
		keys = append(keys, key{"status", f.Status})
	}
	if f.Source != "" {
		keys = append(keys, key{"source", f.Source})
	}
	if f.CompanyID != nil {
		keys = append(keys, key{"company_id", idStr(*f.CompanyID)})
	}
	if f.AssignedTo != nil {
		keys = append(keys, key{"assigned_to", idStr(*f.AssignedTo)})
	}
	switch {
	case q.Scope == listq.ScopeMe, q.Scope == listq.ScopeTeam && f.CallerTeam == nil:
		keys = append(keys, key{"assigned_to", idStr(f.Caller)})
	case q.Scope == listq.ScopeTeam:
		keys = append(keys, key{"assigned_to", ""})
		team = true
	}
	const sum = `SELECT coalesce(sum(n), 0) FROM contact_counts WHERE `
	switch {
	case len(keys) == 0:
		return sum + `dim = '' AND val = ''`, nil, true
	case len(keys) > 1:
		return "", nil, false
	case team:
		return sum + `dim = 'assigned_to' AND val = ANY(ARRAY(SELECT id::text FROM directory_users WHERE team_id = $1))`,
			[]any{*f.CallerTeam}, true
	default:
		return sum + `dim = $1 AND val = $2`, []any{keys[0].dim, keys[0].val}, true
	}
}

// statuses are every value of contacts.status (its CHECK constraint).
var statuses = []string{contacts.StatusActive, contacts.StatusInactive}

// anyStatus is appended to an email lookup so it can use the
// (status, lower(email), id) index: one descent per status.
const anyStatus = `status = ANY('{active,inactive}')`

// and returns w's WHERE clause with one more condition.
func and(w *listq.Where, cond string) string {
	if sql := w.SQL(); sql != "" {
		return sql + " AND " + cond
	}
	return "WHERE " + cond
}

// perStatus reports whether f's rows are read status by status: every sort
// index leads with status, so without a status filter a sort is a merge of
// the two statuses' index ranges (sort_by=status has its own index).
// Company and owner filters are left to their own indexes (company_id,
// (assigned_to, key, id)): merged per status, the planner would walk a
// sort index and filter, which is slow when the filter's rows sit far
// along the sort order.
func perStatus(f contacts.Filter) bool {
	q := f.Query
	return f.Status == "" && q.SortBy != "status" && f.CompanyID == nil && f.AssignedTo == nil &&
		q.Scope != listq.ScopeMe && q.Scope != listq.ScopeTeam
}

// sortKey is q's sort expression and direction (listq renders the same in
// OrderBy; the merged and windowed queries sort by a column alias).
func sortKey(q *listq.Query) (expr, dir string) {
	dir = "ASC"
	if q.Desc {
		dir = "DESC"
	}
	return contacts.ContactSorts.Sorts[q.SortBy], dir
}

// ordered returns "SELECT <cols> FROM contacts <where> <order>" for f, as a
// merge of one ordered branch per status when perStatus. With a page (pp
// rows after off), each branch stops at off+pp rows.
func ordered(f contacts.Filter, w *listq.Where, cols string, paged bool) string {
	q := f.Query
	expr, dir := sortKey(q)
	order := " ORDER BY " + expr + " " + dir + ", id " + dir
	limit, branchLimit := "", ""
	if paged {
		// Typed: PostgreSQL cannot infer a parameter's type in a sublink's LIMIT.
		limit = " LIMIT " + w.Arg(q.PerPage) + "::int OFFSET " + w.Arg(q.Offset()) + "::int"
		if perStatus(f) {
			branchLimit = " LIMIT " + w.Arg(q.Offset()+q.PerPage) + "::int"
		}
	}
	if !perStatus(f) {
		return `SELECT ` + cols + ` FROM contacts ` + w.SQL() + order + limit
	}
	branches := make([]string, len(statuses))
	for i, st := range statuses {
		branches[i] = `(SELECT ` + cols + `, ` + expr + ` AS sort_key FROM contacts ` + and(w, "status = "+w.Arg(st)) +
			order + branchLimit + `)`
	}
	// The outer columns are named, not *, so sort_key stays inside.
	return `SELECT ` + cols + ` FROM (` + strings.Join(branches, " UNION ALL ") + `) merged ORDER BY sort_key ` + dir +
		`, id ` + dir + limit
}

// countSQL is the exact count(*) of f, per status when f has no status
// filter, so the (status, ...) indexes serve range filters such as dates.
func countSQL(f contacts.Filter) (string, []any) {
	w := filter(f)
	if f.Status != "" {
		return `SELECT count(*) FROM contacts ` + w.SQL(), w.Args()
	}
	parts := make([]string, len(statuses))
	for i, st := range statuses {
		parts[i] = `(SELECT count(*) FROM contacts ` + and(w, "status = "+w.Arg(st)) + `)`
	}
	return `SELECT ` + strings.Join(parts, " + "), w.Args()
}

// ListContacts returns one page and the exact total of matching rows.
// Searches count in the same pass as the page (a window count over the
// trigram matches); unfiltered and single-filter lists read the total from
// contact_counts; any other combination counts on a second pool
// connection while the page is read.
func (s *Store) ListContacts(ctx context.Context, f contacts.Filter) ([]contacts.Contact, int, error) {
	if f.Query.Search != "" {
		return s.searchContacts(ctx, f)
	}
	total := 0
	counting := make(chan error, 1)
	if sql, args, ok := counted(f); ok {
		go func() { counting <- s.db.QueryRow(ctx, sql, args...).Scan(&total) }()
	} else {
		sql, args := countSQL(f)
		go func() {
			counting <- s.inTxNoJIT(ctx, func(tx pgx.Tx) error {
				return tx.QueryRow(ctx, sql, planned(args)...).Scan(&total)
			})
		}()
	}
	list, err := s.page(ctx, f)
	if cerr := <-counting; cerr != nil {
		return nil, 0, cerr
	}
	if err != nil {
		return nil, 0, err
	}
	return list, total, nil
}

// page reads one page of f in list order: the page's ids first (from the
// sort indexes alone where they cover the filter, so a deep offset skips
// index entries, not heap rows), then those rows.
func (s *Store) page(ctx context.Context, f contacts.Filter) ([]contacts.Contact, error) {
	w := filter(f)
	q := f.Query
	ids := ordered(f, w, "id", true)
	rows, err := s.db.Query(ctx, `SELECT `+contactCols+` FROM contacts WHERE id = ANY(ARRAY(`+ids+`)) `+q.OrderBy(),
		planned(w.Args())...)
	if err != nil {
		return nil, err
	}
	return collect(rows, scanContact)
}

// planned makes a list query run as an unnamed statement, which
// PostgreSQL plans with the actual values every time. A cached generic plan
// does not know the filter's value (source=event is a quarter of the rows,
// another source a handful) nor the LIMIT (it assumes a tenth of the rows),
// and picked a bitmap scan and sort of 250,000 rows over a short index walk.
func planned(args []any) []any {
	return append([]any{pgx.QueryExecModeExec}, args...)
}

// inTxNoJIT runs fn, the counting or searching queries of a list, in a
// transaction with JIT compilation off: their cost estimates cross
// jit_above_cost, and compiling costs 50-100 ms for a query that runs in
// tens of milliseconds.
func (s *Store) inTxNoJIT(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL jit = off`); err != nil {
			return err
		}
		return fn(tx)
	})
}

// searchContacts answers a search in one pass over the matches: the total
// is a window count over the unordered matches (bitmap scans), computed on
// the same rows the page's ids are cut from; only (id, sort key) pass
// through the window, then the page's rows are read by id. Ordering outside
// the subquery keeps the planner from walking a whole sort index and
// filtering every row.
func (s *Store) searchContacts(ctx context.Context, f contacts.Filter) ([]contacts.Contact, int, error) {
	w := filter(f)
	q := f.Query
	expr, dir := sortKey(q)
	total := 0
	var ids []int64
	list := []contacts.Contact{}
	err := s.inTxNoJIT(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, total FROM (SELECT id, `+expr+` AS sort_key, count(*) OVER () AS total
			FROM contacts `+w.SQL()+`) matches ORDER BY sort_key `+dir+`, id `+dir+` `+q.LimitOffset(w), planned(w.Args())...)
		if err != nil {
			return err
		}
		var id int64
		if _, err := pgx.ForEachRow(rows, []any{&id, &total}, func() error {
			ids = append(ids, id)
			return nil
		}); err != nil {
			return err
		}
		if len(ids) == 0 {
			if q.Page > 1 {
				// A page past the end carries no window count: count separately.
				sql, args := countSQL(f)
				return tx.QueryRow(ctx, sql, planned(args)...).Scan(&total)
			}
			return nil
		}
		rows, err = tx.Query(ctx, `SELECT `+contactCols+` FROM contacts WHERE id = ANY($1) `+q.OrderBy(), ids)
		if err != nil {
			return err
		}
		list, err = pgx.CollectRows(rows, scanContact)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return list, total, nil
}

// CompactCounts folds the per-statement deltas of contact_counts into one
// row per key, so reading a total stays a sum over a handful of rows.
func (s *Store) CompactCounts(ctx context.Context) error {
	_, err := s.db.Exec(ctx, `SELECT contact_counts_compact()`)
	return err
}

// ExportContacts streams the matching contacts in list order (a merge of
// the per-status index scans, so PostgreSQL streams too instead of sorting
// the whole result first). pgx reads
// rows off the wire as they are scanned, so memory stays constant however
// many rows match.
func (s *Store) ExportContacts(ctx context.Context, f contacts.Filter, each func(contacts.Contact) error) error {
	w := filter(f)
	rows, err := s.db.Query(ctx, ordered(f, w, contactCols, false), planned(w.Args())...)
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
	rows, err := s.db.Query(ctx, `SELECT `+contactCols+` FROM contacts
		WHERE lower(email) = lower($1) AND `+anyStatus+` ORDER BY id`, email)
	if err != nil {
		return nil, err
	}
	return collect(rows, scanContact)
}

// GetCompany reads one company.
func (s *Store) GetCompany(ctx context.Context, id int64) (contacts.Company, error) {
	return one(s.db, ctx, scanCompany, "company", `SELECT `+companyCols+` FROM companies WHERE id = $1`, id)
}

func insertCompany(ctx context.Context, q db.Querier, c contacts.Company) (contacts.Company, error) {
	created, err := one(q, ctx, scanCompany, "company", `INSERT INTO companies (name, domain, website, phone, industry,
		address_street, address_city, address_state, address_zip, address_country, created_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING `+companyCols,
		c.Name, c.Domain, c.Website, c.Phone, c.Industry, c.AddressStreet, c.AddressCity, c.AddressState,
		c.AddressZip, c.AddressCountry, directory.Caller(ctx))
	if err != nil {
		return created, err
	}
	return created, outbox.Add(ctx, q, Stream, contacts.CompanyCreated, idStr(created.ID), created)
}

// CreateCompany inserts a company and its event.
func (s *Store) CreateCompany(ctx context.Context, c contacts.Company) (contacts.Company, error) {
	return inTx(ctx, s.db, func(tx pgx.Tx) (contacts.Company, error) { return insertCompany(ctx, tx, c) })
}

// CreateCompanyOnce inserts a company at most once per key.
func (s *Store) CreateCompanyOnce(ctx context.Context, key string, c contacts.Company) (idempotency.Result, error) {
	return insertOnce(ctx, s.db, key, c, insertCompany)
}

// UpdateCompany locks the company, applies the change to the row as
// committed and writes every field back with its event; the schema's
// trigger carries a new name onto the linked contacts in the same
// transaction.
func (s *Store) UpdateCompany(ctx context.Context, id int64, apply func(*contacts.Company) error) (contacts.Company, error) {
	return inTx(ctx, s.db, func(tx pgx.Tx) (contacts.Company, error) {
		c, err := one(tx, ctx, scanCompany, "company", `SELECT `+companyCols+` FROM companies WHERE id = $1`+lockRow, id)
		if err != nil {
			return contacts.Company{}, err
		}
		if err := apply(&c); err != nil {
			return contacts.Company{}, err
		}
		updated, err := one(tx, ctx, scanCompany, "company", `UPDATE companies SET name = $2, domain = $3, website = $4,
			phone = $5, industry = $6, address_street = $7, address_city = $8, address_state = $9,
			address_zip = $10, address_country = $11, updated_at = now() WHERE id = $1 RETURNING `+companyCols,
			c.ID, c.Name, c.Domain, c.Website, c.Phone, c.Industry, c.AddressStreet, c.AddressCity, c.AddressState,
			c.AddressZip, c.AddressCountry)
		if err != nil {
			return updated, err
		}
		return updated, outbox.Add(ctx, tx, Stream, contacts.CompanyUpdated, idStr(updated.ID), updated)
	})
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
		return outbox.Add(ctx, tx, Stream, contacts.CompanyDeleted, idStr(id), outbox.Tombstone(deleted.ID))
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
	q.Since(w)
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
	return collect(rows, func(row pgx.CollectableRow) (contacts.CompanyMatch, error) {
		var m contacts.CompanyMatch
		err := row.Scan(append(companyDest(&m.Company), &m.Score)...)
		return m, err
	})
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
// name or created, ids and the transaction's timestamp are taken up front,
// so each row is written complete (company name included) by one COPY into
// contacts; the outbox gets one contacts.imported event per
// contacts.ImportEventIDs ids. Trigram entries wait in the GIN pending list
// and are merged in the background after commit (cleanSearchIndex). A
// dry run stops after the duplicate check: it counts, writes nothing.
func (s *Store) Import(ctx context.Context, rows []contacts.ImportRow, dryRun bool) (int, []contacts.RowError, error) {
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
			res, err := tx.Query(ctx, `SELECT lower(email) FROM contacts
				WHERE lower(email) = ANY($1) AND `+anyStatus, emails)
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
		if len(keep) == 0 || dryRun {
			imported = len(keep)
			return nil
		}
		companies, err := resolveCompanies(ctx, tx, keep)
		if err != nil {
			return err
		}
		var now time.Time
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
			return err
		}
		// The sequence is looked up once: pg_get_serial_sequence per row
		// was 270 ms of 100,000 nextval calls (now 50 ms).
		var ids []int64
		if err := tx.QueryRow(ctx, `WITH s AS MATERIALIZED (SELECT pg_get_serial_sequence('contacts', 'id')::regclass AS seq)
			SELECT ARRAY(SELECT nextval(seq) FROM s, generate_series(1, $1))`, len(keep)).Scan(&ids); err != nil {
			return err
		}
		slices.Sort(ids)
		list := make([]contacts.Contact, len(keep))
		for i, r := range keep {
			c := r.Contact
			c.ID, c.CompanyID, c.CompanyName, c.AssignedTo = ids[i], nil, nil, nil
			c.CreatedAt.Time, c.UpdatedAt.Time = now, now
			if r.CompanyName != "" {
				co := companies[strings.ToLower(r.CompanyName)]
				c.CompanyID, c.CompanyName = &co.ID, &co.Name
			}
			list[i] = c
		}
		// The names were read under FOR SHARE in this transaction, so the
		// per-row company-name trigger has nothing to add.
		if _, err := tx.Exec(ctx, `SET LOCAL contacts.bulk_company_name = 'on'`); err != nil {
			return err
		}
		// Trigram entries go to the GIN pending list (fastupdate, the
		// default) instead of being merged into the index every 4 MB
		// during the COPY; cleanSearchIndex merges them after commit.
		if _, err := tx.Exec(ctx, `SET LOCAL gin_pending_list_limit = '`+importPendingList+`'`); err != nil {
			return err
		}
		i := 0
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"contacts"}, []string{"id", "first_name", "last_name", "email",
			"phone", "mobile", "job_title", "company_id", "company_name", "address_street", "address_city",
			"address_state", "address_zip", "address_country", "notes", "tags", "status", "source", "created_at",
			"updated_at"}, pgx.CopyFromFunc(func() ([]any, error) {
			if i == len(list) {
				return nil, nil
			}
			c := &list[i]
			i++
			return []any{c.ID, c.FirstName, c.LastName, c.Email, c.Phone, c.Mobile, c.JobTitle, c.CompanyID,
				c.CompanyName, c.AddressStreet, c.AddressCity, c.AddressState, c.AddressZip, c.AddressCountry,
				c.Notes, c.Tags, c.Status, c.Source, c.CreatedAt.Time, c.UpdatedAt.Time}, nil
		})); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SET LOCAL contacts.bulk_company_name = 'off'`); err != nil {
			return err
		}
		// One statement for every event (outbox.AddMany keeps their order).
		events := make([]outbox.Record, 0, (len(ids)+contacts.ImportEventIDs-1)/contacts.ImportEventIDs)
		for chunk := range slices.Chunk(ids, contacts.ImportEventIDs) {
			events = append(events, outbox.Record{Type: contacts.ContactsImported, AggregateID: idStr(chunk[0]),
				Data: contacts.Imported{IDs: chunk}})
		}
		if err := outbox.AddMany(ctx, tx, Stream, events); err != nil {
			return err
		}
		imported = len(list)
		return nil
	})
	if err == nil && imported > 0 {
		s.cleanSearchIndex(ctx)
	}
	return imported, skipped, err
}

// importPendingList is the import transaction's gin_pending_list_limit:
// above the ~90 MB of trigram entries 100,000 rows add, so the COPY never
// stops to merge them.
const importPendingList = "256MB"

// cleanSearchIndex merges the trigram entries an import left in the GIN
// pending list into the index, in the background: until then every search
// also scans the pending list (correct, but slower). It runs under its own
// deadline, detached from the request, and only logs a failure; autovacuum
// or the next insert past the default limit would merge the list anyway.
func (s *Store) cleanSearchIndex(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanTimeout)
	go func() {
		defer cancel()
		start := time.Now()
		var pages int64
		err := s.db.QueryRow(ctx, `SELECT gin_clean_pending_list('contacts_search_trgm')`).Scan(&pages)
		if err != nil {
			s.log.ErrorContext(ctx, "merge search index pending list", "error", err.Error())
			return
		}
		s.log.InfoContext(ctx, "merged search index pending list", "pages", pages,
			"took_ms", time.Since(start).Milliseconds())
	}()
}

// cleanTimeout bounds cleanSearchIndex (100,000 rows take about a second).
const cleanTimeout = 5 * time.Minute

// company is a resolved company of an import.
type company struct {
	Name string
	ID   int64
}

// resolveCompanies maps each lower-cased company name of rows to a company,
// creating (with events) the companies that do not exist yet. Existing
// companies are share-locked, so a rename cannot commit between reading the
// name here and the import's commit.
func resolveCompanies(ctx context.Context, tx pgx.Tx, rows []contacts.ImportRow) (map[string]company, error) {
	ids := map[string]company{}
	var names, lowers []string
	for _, r := range rows {
		if r.CompanyName == "" {
			continue
		}
		k := strings.ToLower(r.CompanyName)
		if _, ok := ids[k]; ok {
			continue
		}
		ids[k] = company{}
		names = append(names, r.CompanyName)
		lowers = append(lowers, k)
	}
	if len(names) == 0 {
		return ids, nil
	}
	type found struct {
		Lower string
		company
	}
	scan := func(row pgx.CollectableRow) (found, error) {
		var f found
		err := row.Scan(&f.Lower, &f.Name, &f.ID)
		return f, err
	}
	res, err := tx.Query(ctx, `SELECT lower(name), name, id FROM companies
		WHERE lower(name) = ANY($1) ORDER BY id FOR SHARE`, lowers)
	if err != nil {
		return nil, err
	}
	existing, err := pgx.CollectRows(res, scan)
	if err != nil {
		return nil, err
	}
	for _, f := range existing {
		// The oldest of same-named companies wins.
		if ids[f.Lower].ID == 0 {
			ids[f.Lower] = f.company
		}
	}
	var missing []string
	for _, n := range names {
		if ids[strings.ToLower(n)].ID == 0 {
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
		SELECT lower(name), name, id FROM ins`, missing, Stream, contacts.CompanyCreated)
	if err != nil {
		return nil, err
	}
	created, err := pgx.CollectRows(res, scan)
	if err != nil {
		return nil, err
	}
	for _, f := range created {
		ids[f.Lower] = f.company
	}
	return ids, nil
}
