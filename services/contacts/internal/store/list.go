package store

import (
	"cmp"
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/list/cube"
	"github.com/opencrm/crm/pkg/list/listsql"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// contactSorts maps the contact list's sort keys (contacts.ContactSorts)
// to the indexed expressions of the schema.
var contactSorts = listsql.Sorts{
	By: map[string]string{
		"name":         "sort_name",
		"email":        "lower(email)",
		"phone":        "phone",
		"company_name": "lower(company_name)",
		"status":       "status",
		"created_at":   "created_at",
		"updated_at":   "updated_at",
	},
	TieBreak: "id",
	Updated:  "updated_at",
}

// searchCond is the substring search: the contact's own fields
// (search_text) OR its company, when the company's name matches (company
// ids from the small companies table's trigram index). company_name is not
// part of search_text, so a term shared by many company names ("company
// 7") does not make the trigram index return most contacts; the planner
// combines both as a BitmapOr. direct reads search_text on the rows at
// hand: contact_search's, whose trigram index finds them (migration 017),
// or contacts' rows a walk already chose. Otherwise the contacts are those
// of the ids contact_search's index finds (contacts has no trigram index),
// again a BitmapOr (of the primary key and the company index).
func searchCond(w *listsql.Where, search string, direct bool) string {
	p := w.Arg("%" + listsql.EscapeLike(search) + "%")
	own := "search_text LIKE lower(" + p + ")"
	if !direct {
		own = "id = ANY(ARRAY(SELECT id FROM contact_search WHERE " + own + "))"
	}
	return "(" + own + " OR company_id = ANY(ARRAY(SELECT id FROM companies WHERE lower(name) LIKE lower(" + p + "))))"
}

// filter builds the WHERE clause on contacts shared by the list and the
// export.
func filter(f contacts.Filter) *listsql.Where {
	w := &listsql.Where{}
	if f.Search != "" {
		w.And(searchCond(w, f.Search, false))
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
	if f.DateFrom != nil {
		w.And("created_at >= " + w.Arg(*f.DateFrom))
	}
	if f.DateTo != nil {
		w.And("created_at < " + w.Arg(*f.DateTo))
	}
	enumFilters(w, f.Custom.Filters)
	contactSorts.Since(w, f.Query)
	switch f.Scope {
	case list.ScopeMe:
		w.And("assigned_to = " + w.Arg(f.Caller))
	case list.ScopeTeam:
		if f.CallerTeam != nil {
			w.And("assigned_to IN (SELECT id FROM directory_users WHERE team_id = " + w.Arg(*f.CallerTeam) + ")")
		} else {
			// A user without a team is a team of one.
			w.And("assigned_to = " + w.Arg(f.Caller))
		}
	}
	return w
}

// unsearched is f without its search: the filters a search's page walks.
func unsearched(f contacts.Filter) contacts.Filter {
	f.Search = ""
	return f
}

// cubed returns the contact_cube statement answering the exact total of f
// (pkg/list/cube) when every filter of f is one of the cube's dimensions:
// status, source, owner (assigned_to, scope=me, scope=team), enum custom
// fields, and the date range. ok is false for a search, a company filter,
// an incremental sync or any other custom-field filter, which count the
// matching contacts.
func cubed(f contacts.Filter) (sql string, args []any, ok bool) {
	// The cube keeps no owner as 0: an owner filter of 0 or less must
	// count contacts (none), not the unassigned ones.
	mine := f.Scope == list.ScopeMe || f.Scope == list.ScopeTeam && f.CallerTeam == nil
	if f.Search != "" || f.CompanyID != nil || f.UpdatedSince != nil ||
		(f.AssignedTo != nil && *f.AssignedTo <= 0) || (mine && f.Caller <= 0) || !f.Custom.EnumEqualitiesOnly() {
		return "", nil, false
	}
	w := &listsql.Where{}
	if f.Status != "" {
		w.And("status = " + w.Arg(f.Status))
	}
	if f.Source != "" {
		w.And("source = " + w.Arg(f.Source))
	}
	if f.AssignedTo != nil {
		w.And("assigned_to = " + w.Arg(*f.AssignedTo))
	}
	switch {
	case mine:
		w.And("assigned_to = " + w.Arg(f.Caller))
	case f.Scope == list.ScopeTeam:
		w.And("assigned_to IN (SELECT id FROM directory_users WHERE team_id = " + w.Arg(*f.CallerTeam) + ")")
	}
	cubeEnums.Where(w, f.Custom.Filters)
	return cube.Count("contact_cube", w, f.DateFrom, f.DateTo), w.Args(), true
}

// cubeEnums is the cube's column of enum values, filtered as a contact's
// custom_fields are. contacts.enums holds the same values (migration 014).
const cubeEnums = customfield.Column("enums")

// enumFilters adds the custom-field filters to w: an enum's equality on
// contacts.enums, which the sort indexes carry, so a walk along one checks
// it on the index entries (migration 014); any other filter on
// custom_fields.
func enumFilters(w *listsql.Where, filters []customfield.Filter) {
	var enums, others []customfield.Filter
	for _, c := range filters {
		if c.IsEnumEquality() {
			enums = append(enums, c)
		} else {
			others = append(others, c)
		}
	}
	cubeEnums.Where(w, enums)
	cf.Where(w, others)
}

// statuses are every value of contacts.status (its CHECK constraint).
var statuses = []string{contacts.StatusActive, contacts.StatusInactive}

// anyStatus is appended to an email lookup so it can use the
// (status, lower(email), id) index: one descent per status.
const anyStatus = `status = ANY('{active,inactive}')`

// and returns w's WHERE clause with one more condition.
func and(w *listsql.Where, cond string) string {
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
// along the sort order. A custom field's sort has no index to merge: per
// status it would read each status's rows through the status index and
// sort them, twice the work of one scan and one top-N sort of the matches.
func perStatus(f contacts.Filter) bool {
	return f.Status == "" && f.SortBy != "status" && f.Custom.Sort == nil && f.CompanyID == nil && f.AssignedTo == nil &&
		f.Scope != list.ScopeMe && f.Scope != list.ScopeTeam
}

// sorts are f's sort keys: the contact list's, and f's custom field when
// it sorts by one.
func sorts(f contacts.Filter) listsql.Sorts { return cf.Sorts(contactSorts, f.Custom.Sort) }

// sortKey is f's sort expression and direction (sorts(f).OrderBy renders
// the same; the merged and windowed queries sort by a column alias).
func sortKey(f contacts.Filter) (expr, dir string) {
	dir = "ASC"
	if f.Desc {
		dir = "DESC"
	}
	return sorts(f).By[f.SortBy], dir
}

// pageIDs returns "SELECT id FROM contacts <where> <order> <page>" for f,
// as a merge of one ordered branch per status when perStatus, each branch
// stopping at off+pp rows (the page is pp rows after off).
func pageIDs(f contacts.Filter, w *listsql.Where) string {
	q := f.Query
	expr, dir := sortKey(f)
	order := " ORDER BY " + expr + " " + dir + ", id " + dir
	// Typed: PostgreSQL cannot infer a parameter's type in a sublink's LIMIT.
	limit := " LIMIT " + w.Arg(q.PerPage) + "::int OFFSET " + w.Arg(q.Offset()) + "::int"
	if !perStatus(f) {
		return `SELECT id FROM contacts ` + w.SQL() + order + limit
	}
	branchLimit := " LIMIT " + w.Arg(q.Offset()+q.PerPage) + "::int"
	branches := make([]string, len(statuses))
	for i, st := range statuses {
		branches[i] = `(SELECT id, ` + expr + ` AS sort_key FROM contacts ` + and(w, "status = "+w.Arg(st)) +
			order + branchLimit + `)`
	}
	// The outer column is named, not *, so sort_key stays inside.
	return `SELECT id FROM (` + strings.Join(branches, " UNION ALL ") + `) merged ORDER BY sort_key ` + dir +
		`, id ` + dir + limit
}

// countSQL is the exact count(*) of f, per status when f has no status
// filter, so the (status, ...) indexes serve range filters such as dates.
// A custom-field filter, which no index serves, counts in one scan, as
// does a search, whose matches its own indexes find: a search that is the
// only filter counts contact_search alone, as narrow as the table allows.
func countSQL(f contacts.Filter) (string, []any) {
	if f.Search != "" && filter(unsearched(f)).SQL() == "" {
		w := &listsql.Where{}
		return `SELECT count(*) FROM contact_search WHERE ` + searchCond(w, f.Search, true), w.Args()
	}
	w := filter(f)
	if f.Status != "" || len(f.Custom.Filters) > 0 || f.Search != "" {
		return `SELECT count(*) FROM contacts ` + w.SQL(), w.Args()
	}
	parts := make([]string, len(statuses))
	for i, st := range statuses {
		parts[i] = `(SELECT count(*) FROM contacts ` + and(w, "status = "+w.Arg(st)) + `)`
	}
	return `SELECT ` + strings.Join(parts, " + "), w.Args()
}

// ListContacts returns one page and the exact total of matching rows.
// Where the count cube answers the total (cubed) it is read first, and the
// page follows from it: none when nothing matches or the page is past the
// end, one pass over the matches when they are few (listsql.FewMatches),
// a sort-index walk otherwise. A search counts, then walks (searched). A
// company filter, whose matches its own index finds, counts and pages in
// one pass over the matches. Any other filter counts on a second pool
// connection while the page is read.
func (s *Store) ListContacts(ctx context.Context, f contacts.Filter) ([]contacts.Contact, int, error) {
	if f.Search != "" {
		return s.searched(ctx, f)
	}
	if f.CompanyID != nil {
		return s.matched(ctx, f)
	}
	total := 0
	if sql, args, ok := cubed(f); ok {
		if err := s.db.QueryRow(ctx, sql, args...).Scan(&total); err != nil {
			return nil, 0, err
		}
		switch {
		case total == 0 || f.Query.Offset() >= total:
			return []contacts.Contact{}, total, nil
		case total <= cmp.Or(s.fewMatches, listsql.FewMatches):
			list, _, err := s.matched(ctx, f)
			return list, total, err
		}
		list, err := s.page(ctx, f)
		return list, total, err
	}
	counting := make(chan error, 1)
	sql, args := countSQL(f)
	go func() {
		counting <- s.inTxNoJIT(ctx, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, sql, s.planned(args)...).Scan(&total)
		})
	}()
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
	ids := pageIDs(f, w)
	rows, err := s.db.Query(ctx, `SELECT `+contactCols+` FROM contacts WHERE id = ANY(ARRAY(`+ids+`)) `+sorts(f).OrderBy(q),
		s.planned(w.Args())...)
	if err != nil {
		return nil, err
	}
	return s.renderedContacts(ctx, rows)
}

// planned makes a list query run as an unnamed statement, which
// PostgreSQL plans with the actual values every time. A cached generic plan
// does not know the filter's value (source=event is a quarter of the rows,
// another source a handful) nor the LIMIT (it assumes a tenth of the rows),
// and picked a bitmap scan and sort of 250,000 rows over a short index walk.
// Planning is most of what such a statement costs PostgreSQL, parsing a
// small part: prepared statements planned per call (plan_cache_mode
// force_custom_plan) saved 2-3 % of the list's PostgreSQL CPU, generic
// plans about 9 % but made a rare source 4x slower (BenchmarkListStatements),
// so the list stays unnamed. listMode lets that benchmark compare.
func (s *Store) planned(args []any) []any {
	return append([]any{cmp.Or(s.listMode, pgx.QueryExecModeExec)}, args...)
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

// matched answers a list in one pass over its matches, found through the
// filters' own indexes (the trigram index for a search, the company index,
// the bitmap of several), counting them in the same pass (onePass).
func (s *Store) matched(ctx context.Context, f contacts.Filter) ([]contacts.Contact, int, error) {
	var list []contacts.Contact
	total := 0
	err := s.inTxNoJIT(ctx, func(tx pgx.Tx) error {
		var err error
		list, total, err = s.onePass(ctx, tx, f, -1)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return list, total, s.renderList(ctx, list)
}

// onePass reads f's page from one pass over its matches: only (id, sort
// key) are sorted, then the page's rows are read by id. Sorting outside
// the subquery (OFFSET 0 keeps it one) keeps the planner from walking a
// whole sort index and filtering every row. A total below zero is
// counted on the same rows the page is cut from (a window count over the
// unordered matches); otherwise it is f's count, made already, and the
// pass only keeps the page's top rows.
func (s *Store) onePass(ctx context.Context, tx pgx.Tx, f contacts.Filter, total int) ([]contacts.Contact, int, error) {
	w := filter(f)
	q := f.Query
	expr, dir := sortKey(f)
	counted := total < 0
	count := "count(*) OVER ()"
	if !counted {
		count = w.Arg(total) + "::bigint"
	}
	rows, err := tx.Query(ctx, `SELECT id, total FROM (SELECT id, `+expr+` AS sort_key, `+count+` AS total
		FROM contacts `+w.SQL()+` OFFSET 0) matches ORDER BY sort_key `+dir+`, id `+dir+` `+listsql.LimitOffset(w, q), s.planned(w.Args())...)
	if err != nil {
		return nil, 0, err
	}
	var ids []int64
	var id int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &total}, func() error {
		ids = append(ids, id)
		return nil
	}); err != nil {
		return nil, 0, err
	}
	if len(ids) == 0 {
		if counted {
			total = 0
			if q.Page > 1 {
				// A page past the end carries no window count: count separately.
				sql, args := countSQL(f)
				err = tx.QueryRow(ctx, sql, s.planned(args)...).Scan(&total)
			}
		}
		return []contacts.Contact{}, total, err
	}
	list, err := byID(ctx, tx, f, ids)
	return list, total, err
}

// searched answers a search: its exact total first (countSQL), then its
// page by walking the other filters' sort order (pageIDs, the sort indexes)
// and checking each row's search text, as far as listsql.SearchWalk
// expects the page's matches to reach; the cube counts the rows of that
// order. A term matching one contact in eight fills a first page of 50
// from about 400 rows, where one pass over its 125,000 matches (onePass)
// sorted every one. That pass, without counting again, remains for the
// walks that cannot be bounded (no cube count for the other filters, a
// custom field's sort, a narrow term, a deep page) or fall short of the
// page (walkPage).
func (s *Store) searched(ctx context.Context, f contacts.Filter) ([]contacts.Contact, int, error) {
	q := f.Query
	total := 0
	list := []contacts.Contact{}
	err := s.inTxNoJIT(ctx, func(tx pgx.Tx) error {
		sql, args := countSQL(f)
		if err := tx.QueryRow(ctx, sql, s.planned(args)...).Scan(&total); err != nil {
			return err
		}
		if total == 0 || q.Offset() >= total {
			return nil // no page
		}
		walked, found, err := s.walkPage(ctx, tx, f, total)
		if err != nil || found {
			list = walked
			return err
		}
		// One pass over the matches, whose count is made: it sorts them
		// for the page and does not count them again.
		list, _, err = s.onePass(ctx, tx, f, total)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return list, total, s.renderList(ctx, list)
}

// walkPage reads f's page by walking the other filters' sort order, when
// the cube counts that order's rows and no custom field sorts, as far as
// listsql.SearchPage walks for the total matches. found is false when it
// could not walk, or its walk fell short of the page.
func (s *Store) walkPage(ctx context.Context, tx pgx.Tx, f contacts.Filter, total int) (page []contacts.Contact, found bool, err error) {
	cubeSQL, cubeArgs, ok := cubed(unsearched(f))
	if !ok || f.Custom.Sort != nil {
		return nil, false, nil
	}
	var rows int
	if err := tx.QueryRow(ctx, cubeSQL, cubeArgs...).Scan(&rows); err != nil {
		return nil, false, err
	}
	q := f.Query
	need := q.Offset() + q.PerPage
	ids, walked, found, err := listsql.SearchPage(need, rows, total, func(n int) ([]int64, error) {
		return s.walkIDs(ctx, tx, f, n, need)
	})
	if err != nil {
		return nil, false, err
	}
	if walked && s.searchWalked != nil {
		s.searchWalked(found)
	}
	if !found {
		return nil, false, nil
	}
	page, err = byID(ctx, tx, f, ids[min(q.Offset(), len(ids)):])
	return page, err == nil, err
}

// walkIDs returns, in list order, the first need contacts matching f's
// search among the first walk rows of its other filters' sort order.
func (s *Store) walkIDs(ctx context.Context, tx pgx.Tx, f contacts.Filter, walk, need int) ([]int64, error) {
	rest := unsearched(f)
	rest.Page, rest.PerPage = 1, walk
	w := filter(rest)
	expr, dir := sortKey(f)
	rows, err := tx.Query(ctx, `SELECT id FROM contacts WHERE id = ANY(ARRAY(`+pageIDs(rest, w)+`)) AND `+
		searchCond(w, f.Search, true)+` ORDER BY `+expr+` `+dir+`, id `+dir+` LIMIT `+w.Arg(need),
		s.planned(w.Args())...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// byID reads the contacts of ids in f's list order.
func byID(ctx context.Context, tx pgx.Tx, f contacts.Filter, ids []int64) ([]contacts.Contact, error) {
	rows, err := tx.Query(ctx, `SELECT `+contactCols+` FROM contacts WHERE id = ANY($1) `+sorts(f).OrderBy(f.Query), ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanContact)
}

// CompactCounts folds the per-statement deltas of contact_counts and
// contact_cube into one row per key, so reading a total stays a sum over
// a few rows.
func (s *Store) CompactCounts(ctx context.Context) error {
	_, err := s.db.Exec(ctx, `SELECT contact_counts_compact(), contact_cube_compact()`)
	return err
}
