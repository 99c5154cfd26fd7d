// Package listsql turns a list.Query into SQL for a store: WHERE clauses
// whose values are all placeholders, ORDER BY from a whitelist of trusted
// expressions, LIMIT/OFFSET and the incremental-sync range. Input never
// becomes SQL text.
package listsql

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/opencrm/crm/pkg/list"
)

// Sorts is a collection's sort whitelist: each public key maps to a SQL
// expression (trusted code), plus the tie-break column that keeps pages
// stable and the updated_at expression of the sync filter.
type Sorts struct {
	// By maps each public sort key to its SQL expression.
	By map[string]string
	// TieBreak is appended to every ORDER BY ("id" when empty).
	TieBreak string
	// Updated is the collection's updated_at expression ("" when the
	// collection has no incremental sync).
	Updated string
}

// Keys are the public sort keys, for the edge's parser.
func (s Sorts) Keys() []string {
	keys := make([]string, 0, len(s.By))
	for k := range s.By {
		keys = append(keys, k)
	}
	return keys
}

func (s Sorts) tie() string {
	if s.TieBreak == "" {
		return "id"
	}
	return s.TieBreak
}

// OrderBy returns "ORDER BY <expr> <dir>, <tiebreak> <dir>". Nulls follow
// PostgreSQL's default (last ascending, first descending) so one btree
// index on (expr, tiebreak) serves both directions. A key outside the
// whitelist (the parser refuses those) sorts by the tie-break alone.
func (s Sorts) OrderBy(q list.Query) string {
	dir := "ASC"
	if q.Desc {
		dir = "DESC"
	}
	expr, ok := s.By[q.SortBy]
	if !ok {
		return fmt.Sprintf("ORDER BY %s %s", s.tie(), dir)
	}
	return fmt.Sprintf("ORDER BY %s %s, %s %s", expr, dir, s.tie(), dir)
}

// Since adds the incremental sync filter to w, if q has one: updated_at >=
// updated_since, or with after_id the row comparison (updated_at, id) >
// (updated_since, after_id), which a btree index on (updated_at, id)
// answers as one range.
func (s Sorts) Since(w *Where, q list.Query) {
	if q.UpdatedSince == nil || s.Updated == "" {
		return
	}
	if q.AfterID == nil {
		w.And(s.Updated + " >= " + w.Arg(*q.UpdatedSince))
		return
	}
	w.And("(" + s.Updated + ", " + s.tie() + ") > (" + w.Arg(*q.UpdatedSince) + ", " + w.Arg(*q.AfterID) + ")")
}

// FewMatches is the most matching rows a list reads in one pass over its
// matches (found through the filters' own indexes, then sorted) rather
// than by walking a sort index until a page is full. At a million rows a
// pass costs a few microseconds per match, so a few thousand stay within
// tens of milliseconds; a walk costs as many rows as precede the page's
// last match in sort order, which is short for common matches but, when
// the filters correlate with the sort key or match nothing, up to the
// whole index.
const FewMatches = 5_000

// MaxWalk is the most rows of a filter's sort order a search reads to find
// its page (SearchWalk). A walk costs a few microseconds per row (an index
// entry and the row's search text), so 10,000 stay near 40 ms; one pass
// over a broad term's matches counts and sorts them all, about 250 ms at
// 125,000 matches.
const MaxWalk = 10_000

// SearchWalk is how many rows of a filter's sort order a search walks to
// find the first need matches (its page's last row, offset included) when
// matches of the filter's rows match the term: the expected need × rows /
// matches, doubled for an uneven spread, plus need. ok is false when that
// passes MaxWalk (a narrow term, a deep page), where one pass over the
// matches is cheaper. A walk that finds fewer than need matches in its
// rows, short of the filter's end, says nothing; the caller then makes
// that pass.
func SearchWalk(need, rows, matches int) (walk int, ok bool) {
	if need <= 0 || matches <= 0 || rows < matches {
		return 0, false
	}
	expected := (need*rows + matches - 1) / matches
	walk = 2*expected + need
	if walk > MaxWalk {
		return 0, false
	}
	return min(walk, rows), true
}

// SearchPage finds a search's first need matches by walking the rows of
// a filter's sort order (rows of them; matches match the term), as far
// as SearchWalk bounds it: walk reads the first n rows of that order and
// returns, in list order, up to need ids of those matching. walked is
// false when SearchWalk bounds no walk; found is true when the ids are
// the page's: need of them, or all there are because the walk reached
// the filter's last row. Fewer in a walk that stopped short says nothing
// of the rows after it, and the caller makes one pass over the matches.
func SearchPage(need, rows, matches int, walk func(n int) ([]int64, error)) (ids []int64, walked, found bool, err error) {
	n, ok := SearchWalk(need, rows, matches)
	if !ok {
		return nil, false, false, nil
	}
	if ids, err = walk(n); err != nil {
		return nil, true, false, err
	}
	if len(ids) < need && n < rows {
		return nil, true, false, nil
	}
	return ids, true, true, nil
}

// LimitOffset returns the LIMIT/OFFSET clause of q's page as placeholders added to w.
func LimitOffset(w *Where, q list.Query) string {
	return "LIMIT " + w.Arg(q.PerPage) + " OFFSET " + w.Arg(q.Offset())
}

// Where builds a WHERE clause whose values are all placeholders.
type Where struct {
	conds []string
	args  []any
}

// Arg adds a value and returns its placeholder ($n).
func (w *Where) Arg(v any) string {
	w.args = append(w.args, v)
	return "$" + strconv.Itoa(len(w.args))
}

// And adds a condition; it must use placeholders from Arg for every value.
func (w *Where) And(cond string) { w.conds = append(w.conds, cond) }

// SQL returns "WHERE a AND b" or "".
func (w *Where) SQL() string {
	if len(w.conds) == 0 {
		return ""
	}
	return "WHERE " + strings.Join(w.conds, " AND ")
}

// Args returns the placeholder values in order.
func (w *Where) Args() []any { return w.args }

// EscapeLike escapes % _ and \ so a search term matches literally in ILIKE.
func EscapeLike(s string) string { return likeEscaper.Replace(s) }

// likeEscaper is built once: a Replacer is safe for concurrent use.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
