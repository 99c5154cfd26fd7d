package store

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/list/cube"
	"github.com/opencrm/crm/pkg/list/listsql"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

// Sorts maps the public sort keys (leads.SortKeys) to SQL expressions;
// each one has an index per direction in the schema.
var Sorts = listsql.Sorts{
	By: map[string]string{
		"name":             "lower(first_name || ' ' || last_name)",
		"email":            "lower(email)",
		"company_name":     "lower(company)",
		"status":           "status",
		"source":           "lower(source)",
		"assigned_to_name": "lower(assigned_to_name)",
		"created_at":       "created_at",
		"updated_at":       "updated_at",
	},
	TieBreak: "id",
	Updated:  "updated_at",
}

// custom is the column of the leads' custom field values.
const custom = customfield.Column("custom_fields")

// orderBy is the list's ORDER BY: a custom-field sort key (cf.<name>) or
// one of Sorts.
func orderBy(f leads.Filter) string {
	return custom.Sorts(Sorts, f.Custom.Sort).OrderBy(f.Query)
}

// Where builds the filter on leads shared by the list and the CSV export.
// A search is the ids lead_search's trigram index finds (searchCond).
func Where(f leads.Filter) *listsql.Where {
	w := &listsql.Where{}
	customFilters(w, f.Custom.Filters)
	q := f.Query
	if q.Search != "" {
		w.And(searchCond(w, q.Search, false))
	}
	if f.Status != "" {
		w.And("status = " + w.Arg(f.Status))
	}
	if f.Source != "" {
		w.And("lower(source) = lower(" + w.Arg(f.Source) + ")")
	}
	if f.AssignedTo != nil {
		w.And("assigned_to = " + w.Arg(*f.AssignedTo))
	}
	if q.DateFrom != nil {
		w.And("created_at >= " + w.Arg(*q.DateFrom))
	}
	if q.DateTo != nil {
		w.And("created_at < " + w.Arg(*q.DateTo))
	}
	Sorts.Since(w, q)
	switch q.Scope {
	case list.ScopeMe:
		w.And("assigned_to = " + w.Arg(f.CallerID))
	case list.ScopeTeam:
		// The caller's team from the directory; a caller without a team is
		// a team of one.
		caller := w.Arg(f.CallerID)
		w.And(`(assigned_to = ` + caller + ` OR assigned_to IN (SELECT u.id FROM directory_users u
			JOIN directory_users me ON me.team_id = u.team_id WHERE me.id = ` + caller + `))`)
	}
	return w
}

// searchCond is the substring search on search_text. direct reads it on
// the rows at hand: lead_search's, which its trigram index finds, or the
// leads a walk already chose (searched). Otherwise the leads are those of
// the ids lead_search's index finds (leads has no trigram index since
// migration 011), as an array the subquery computes first: written id IN
// (subquery), the planner took a custom-field filter for selective (it has
// no statistics on one) and probed the projection once per lead of a
// parallel scan of leads (1.4 s for a broad term at 1,000,000 leads
// against 0.8 s).
func searchCond(w *listsql.Where, search string, direct bool) string {
	cond := "search_text LIKE " + w.Arg("%"+listsql.EscapeLike(strings.ToLower(search))+"%")
	if direct {
		return cond
	}
	return "id = ANY(ARRAY(SELECT id FROM lead_search WHERE " + cond + "))"
}

// unsearched is f without its search: the filters a search's page walks.
func unsearched(f leads.Filter) leads.Filter {
	f.Search = ""
	return f
}

// List returns one page of leads and the total matching. A search counts,
// then walks (searched). A filter the count cube answers (cubed) sums its
// rows, about a millisecond at any table size; any other filter counts the
// matching leads. The page follows from the total: none when nothing
// matches or the page is past the end, one pass over the matches when they
// are few (listsql.FewMatches), a sort-index walk otherwise.
func (s *Store) List(ctx context.Context, f leads.Filter) ([]leads.Lead, int, error) {
	if f.Query.Search != "" {
		return s.searched(ctx, f)
	}
	w := Where(f)
	var total int
	if sql, args, ok := cubed(f); ok {
		if err := s.db.QueryRow(ctx, sql, args...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("count leads: %w", err)
		}
	} else {
		var err error
		if total, err = s.count(ctx, w); err != nil {
			return nil, 0, err
		}
	}
	switch {
	case total == 0 || f.Query.Offset() >= total:
		return []leads.Lead{}, total, nil
	case total <= cmp.Or(s.fewMatches, listsql.FewMatches):
		items, _, err := s.matched(ctx, f)
		return items, total, err
	}
	// The page's ids come from the sort index alone where it carries the
	// filters (leads migration 008): an index-only walk skips the entries
	// of other leads without reading them. Typed: PostgreSQL cannot infer
	// a parameter's type in a sublink's LIMIT.
	page := `SELECT id FROM leads ` + w.SQL() + ` ` + orderBy(f) +
		` LIMIT ` + w.Arg(f.Query.PerPage) + `::int OFFSET ` + w.Arg(f.Query.Offset()) + `::int`
	sql := `SELECT ` + Columns + ` FROM leads WHERE id = ANY(ARRAY(` + page + `)) ` + orderBy(f)
	rows, err := s.db.Query(ctx, sql, w.Args()...)
	if err != nil {
		return nil, 0, fmt.Errorf("list leads: %w", err)
	}
	items, err := pgx.CollectRows(rows, Scan)
	if err != nil {
		return nil, 0, fmt.Errorf("list leads: %w", err)
	}
	return s.renderAll(ctx, items, total)
}

// cubed returns the lead_cube statement answering the exact total of f
// (pkg/list/cube) when every filter of f is one of the cube's dimensions:
// status, source, owner (assigned_to, scope=me, scope=team), enum custom
// fields compared for equality, and a date range of whole UTC days. Each
// condition is Where's own, applied to the cube's column of the same
// value, so the two agree. ok is false for anything else (an incremental
// sync, another custom-field filter, a range not on day boundaries),
// which counts the matching leads.
func cubed(f leads.Filter) (sql string, args []any, ok bool) {
	q := f.Query
	// The cube keeps no owner as 0: an owner of 0 or less must count
	// leads (none), not the unassigned ones.
	mine := q.Scope == list.ScopeMe || q.Scope == list.ScopeTeam
	if q.Search != "" || q.UpdatedSince != nil || !utcDay(q.DateFrom) || !utcDay(q.DateTo) ||
		(f.AssignedTo != nil && *f.AssignedTo <= 0) || (mine && f.CallerID <= 0) || !f.Custom.EnumEqualitiesOnly() {
		return "", nil, false
	}
	w := &listsql.Where{}
	cubeEnums.Where(w, f.Custom.Filters)
	if f.Status != "" {
		w.And("status = " + w.Arg(f.Status))
	}
	if f.Source != "" {
		w.And("lower(source) = lower(" + w.Arg(f.Source) + ")")
	}
	if f.AssignedTo != nil {
		w.And("assigned_to = " + w.Arg(*f.AssignedTo))
	}
	switch q.Scope {
	case list.ScopeMe:
		w.And("assigned_to = " + w.Arg(f.CallerID))
	case list.ScopeTeam:
		// As Where: the caller and their team's members. The cube's 0
		// (unassigned) is kept out even if a directory row had id 0.
		caller := w.Arg(f.CallerID)
		w.And(`assigned_to <> 0 AND (assigned_to = ` + caller + ` OR assigned_to IN (SELECT u.id FROM directory_users u
			JOIN directory_users me ON me.team_id = u.team_id WHERE me.id = ` + caller + `))`)
	}
	return cube.Count("lead_cube", w, q.DateFrom, q.DateTo), w.Args(), true
}

// cubeEnums is the cube's column of enum values, filtered as a lead's
// custom_fields are. leads.enums holds the same values (migration 008).
const cubeEnums = customfield.Column("enums")

// customFilters adds the custom-field filters to w: an enum's equality on
// leads.enums, which the sort indexes carry, so a walk along one checks it
// on the index entries (migration 008); any other filter on custom_fields.
//
// The enum condition is written coalesce(<value> = <option>, false), the
// same rows as the comparison, so the planner estimates it at one half
// instead of the 0.5 % it assumes for an equality on an expression without
// statistics (there are none per field). An enum option is a sizeable part
// of a list, and the page path runs only when the cube counted more than
// listsql.FewMatches matches: estimated at 0.5 %, an owner's 10,000 gold
// leads looked like 100, and the planner read all 20,000 of the owner's
// rows and sorted them (276 ms) instead of walking the sort index (a few
// thousand index-only entries).
func customFilters(w *listsql.Where, filters []customfield.Filter) {
	var others []customfield.Filter
	for _, c := range filters {
		if !c.IsEnumEquality() {
			others = append(others, c)
			continue
		}
		if !customfield.ValidName(c.Def.Name) {
			panic("leads: invalid custom field name in SQL: " + c.Def.Name)
		}
		value := "(enums ->> '" + c.Def.Name + "')"
		texts := make([]string, len(c.Values))
		for i, v := range c.Values {
			texts[i] = customfield.Cell(v)
		}
		if len(texts) == 1 {
			w.And("coalesce(" + value + " = " + w.Arg(texts[0]) + ", false)")
		} else {
			w.And("coalesce(" + value + " = ANY(" + w.Arg(texts) + "::text[]), false)")
		}
	}
	custom.Where(w, others)
}

// utcDay reports whether t is unset or a UTC midnight: the cube counts
// whole UTC days (the API's date_from and date_to always are).
func utcDay(t *time.Time) bool {
	if t == nil {
		return true
	}
	u := t.UTC()
	return u.Equal(time.Date(u.Year(), u.Month(), u.Day(), 0, 0, 0, 0, time.UTC))
}

// count is the number of leads matching w (the filtered total).
func (s *Store) count(ctx context.Context, w *listsql.Where) (int, error) {
	var n int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM leads `+w.SQL(), w.Args()...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count leads: %w", err)
	}
	return n, nil
}

// searched answers a search: its exact total first, then its page by
// walking the other filters' sort order (an index-only walk of the sort
// index, migration 008) and checking each row's search_text, as far as
// listsql.SearchWalk expects the page's last match to lie; the cube counts
// the rows of that order. The two costs split: counting a broad term's
// matches is a bitmap scan of lead_search, as narrow as the table allows
// (migration 013), while a term matching one lead in eight fills a first
// page of 50 from about 400 rows instead of sorting 125,000 matches. One
// pass over the matches (onePass), without counting again, remains for
// the walks that cannot be bounded (no cube count for the other filters,
// a custom field's sort, a narrow term, a deep page) or fall short of the
// page (walkPage). JIT is off: a
// broad count's cost estimate crosses jit_above_cost, and compiling costs
// more than the query. The count and the walk are unnamed statements
// (QueryExecModeExec), planned with the term itself each time: a cached
// generic plan knows neither how many rows the pattern matches nor the
// LIMIT.
func (s *Store) searched(ctx context.Context, f leads.Filter) ([]leads.Lead, int, error) {
	q := f.Query
	total := 0
	items := []leads.Lead{}
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('jit', 'off', true)`); err != nil {
			return err
		}
		// A search that is the only filter counts lead_search alone.
		w := Where(f)
		sql := `SELECT count(*) FROM leads ` + w.SQL()
		if Where(unsearched(f)).SQL() == "" {
			w = &listsql.Where{}
			sql = `SELECT count(*) FROM lead_search WHERE ` + searchCond(w, f.Search, true)
		}
		if err := tx.QueryRow(ctx, sql, append([]any{pgx.QueryExecModeExec}, w.Args()...)...).Scan(&total); err != nil {
			return err
		}
		if total == 0 || q.Offset() >= total {
			return nil // no page
		}
		walked, found, err := s.walkPage(ctx, tx, f, total)
		if err != nil || found {
			items = walked
			return err
		}
		// One pass over the matches, whose count is made: it sorts them
		// for the page and does not count them again.
		items, _, err = onePass(ctx, tx, f, total)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("search leads: %w", err)
	}
	return s.renderAll(ctx, items, total)
}

// walkPage reads f's page by walking the other filters' sort order, when
// the cube counts that order's rows and no custom field sorts, as far as
// listsql.SearchPage walks for the total matches. found is false when it
// could not walk, or its walk fell short of the page.
func (s *Store) walkPage(ctx context.Context, tx pgx.Tx, f leads.Filter, total int) (page []leads.Lead, found bool, err error) {
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
		return walkIDs(ctx, tx, f, n, need)
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

// walkIDs returns, in list order, the first need leads matching f's
// search among the first walk rows of its other filters' sort order: the
// inner query walks the sort index alone (the page path's walk, with
// walk rows), the outer reads those leads by id and checks search_text.
// Typed: PostgreSQL cannot infer a parameter's type in a sublink's LIMIT.
func walkIDs(ctx context.Context, tx pgx.Tx, f leads.Filter, walk, need int) ([]int64, error) {
	w := Where(unsearched(f))
	rows, err := tx.Query(ctx, `SELECT id FROM leads WHERE id = ANY(ARRAY(SELECT id FROM leads `+w.SQL()+` `+orderBy(f)+
		` LIMIT `+w.Arg(walk)+`::int)) AND `+searchCond(w, f.Search, true)+` `+orderBy(f)+` LIMIT `+w.Arg(need),
		append([]any{pgx.QueryExecModeExec}, w.Args()...)...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// byID reads the leads of ids in f's list order.
func byID(ctx context.Context, tx pgx.Tx, f leads.Filter, ids []int64) ([]leads.Lead, error) {
	rows, err := tx.Query(ctx, `SELECT `+Columns+` FROM leads WHERE id = ANY($1) `+orderBy(f), ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, Scan)
}

// matched answers a list with one pass over its matches (onePass),
// counting them in the same pass. work_mem is 32MB for the transaction:
// the window count holds every match until it has counted them, and a
// broad term's 125,000 (id, sort key) rows, about 10MB, spilled to a
// temporary file under the default 4MB (35 of 200 ms at 1,000,000 leads).
// JIT is off: the window's cost estimate crosses jit_above_cost, and
// compiling costs more than the query.
func (s *Store) matched(ctx context.Context, f leads.Filter) ([]leads.Lead, int, error) {
	var items []leads.Lead
	total := 0
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('jit', 'off', true), set_config('work_mem', '32MB', true)`); err != nil {
			return err
		}
		var err error
		items, total, err = onePass(ctx, tx, f, -1)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("search leads: %w", err)
	}
	return s.renderAll(ctx, items, total)
}

// onePass reads f's page from one pass over its matches (for a search,
// the ids lead_search's trigram index finds). Only (id, sort key) pass
// through the top-N sort, not every column of every match (a broad term
// matches 125,000 of 1,000,000 leads: carrying whole rows through cost 5x
// the count itself); the page's rows are then read by id. The sort runs
// outside a subquery over the unordered matches (OFFSET 0 keeps it one):
// sorting inside would let the planner walk a whole sort index and filter
// a million rows. A total below zero is counted on the same rows the page
// is cut from (a window count), instead of a second bitmap scan and
// recheck; otherwise it is f's count, made already. The statement is
// unnamed (QueryExecModeExec), planned with its values each time.
func onePass(ctx context.Context, tx pgx.Tx, f leads.Filter, total int) ([]leads.Lead, int, error) {
	w := Where(f)
	q := f.Query
	key, ok := custom.Sorts(Sorts, f.Custom.Sort).By[q.SortBy]
	if !ok {
		key = "id"
	}
	dir := "ASC"
	if q.Desc {
		dir = "DESC"
	}
	counted := total < 0
	count := "count(*) OVER ()"
	if !counted {
		count = w.Arg(total) + "::bigint"
	}
	rows, err := tx.Query(ctx, `SELECT id, total FROM (SELECT id, `+key+` AS sort_key, `+count+` AS total
		FROM leads `+w.SQL()+` OFFSET 0) matches ORDER BY sort_key `+dir+`, id `+dir+` `+listsql.LimitOffset(w, q),
		append([]any{pgx.QueryExecModeExec}, w.Args()...)...)
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
				// A page past the end carries no window count: count
				// separately (with a fresh Where: LimitOffset added w's
				// paging args).
				cw := Where(f)
				err = tx.QueryRow(ctx, `SELECT count(*) FROM leads `+cw.SQL(), cw.Args()...).Scan(&total)
			}
		}
		return []leads.Lead{}, total, err
	}
	items, err := byID(ctx, tx, f, ids)
	return items, total, err
}

// renderAll renders a page's custom fields with one read of the
// definitions.
func (s *Store) renderAll(ctx context.Context, items []leads.Lead, total int) ([]leads.Lead, int, error) {
	defs, err := definitions(ctx, s.db)
	if err != nil {
		return nil, 0, err
	}
	for i := range items {
		render(defs, &items[i])
	}
	return items, total, nil
}

// CompactCounts folds the counter's per-statement deltas into one row,
// then the count cube's deltas into one row per key (lead_cube_compact).
// Each DELETE sees only deltas committed before it started, so concurrent
// writes are never lost, and every sum is unchanged at every instant.
func (s *Store) CompactCounts(ctx context.Context) error {
	if _, err := s.db.Exec(ctx, `WITH folded AS (DELETE FROM lead_count_deltas RETURNING n)
		INSERT INTO lead_count_deltas (n) SELECT coalesce(sum(n), 0) FROM folded`); err != nil {
		return fmt.Errorf("compact lead counter: %w", err)
	}
	if _, err := s.db.Exec(ctx, `SELECT lead_cube_compact()`); err != nil {
		return fmt.Errorf("compact lead cube: %w", err)
	}
	return nil
}
