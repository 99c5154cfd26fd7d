// Package listq parses the list query parameters every collection shares
// (page, per_page, search, sort_by, sort_dir, date_from, date_to, scope,
// and updated_since/after_id where the collection supports sync),
// builds safe SQL filters with placeholders only, and renders the API's
// pagination envelope (docs/api.md). Sort keys come from a whitelist, never from input.
package listq

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/validate"
)

// Limits of every list (docs/api.md).
const (
	DefaultPerPage = 25
	MaxPerPage     = 100
	// MaxSearch bounds the search term; longer terms cannot be useful.
	MaxSearch = 200
)

// Scope values: who a record is assigned to.
const (
	ScopeMe      = "me"
	ScopeTeam    = "team"
	ScopeCompany = "company"
)

// Spec describes one collection's sortable columns.
type Spec struct {
	// Sorts maps each public sort key to a SQL expression (trusted code).
	Sorts map[string]string
	// DefaultSort is the key used when sort_by is absent.
	DefaultSort string
	// TieBreak is appended to every ORDER BY so pages are stable ("id").
	TieBreak string
	// Updated is the SQL expression of the collection's updated_at column.
	// When set, Parse reads updated_since and after_id, the incremental
	// sync filter (see docs/api.md, "Incremental sync"); Sorts should then
	// hold an "updated_at" key on the same expression.
	Updated string
}

// Query is a parsed list request.
type Query struct {
	Page, PerPage int
	Search        string
	SortBy        string
	Desc          bool
	// DateFrom and DateTo are inclusive UTC days; DateTo is already moved
	// to the start of the next day for a half-open comparison.
	DateFrom, DateTo *time.Time
	Scope            string
	// UpdatedSince keeps records updated at or after it (inclusive).
	UpdatedSince *time.Time
	// AfterID resumes a sync after the record (UpdatedSince, AfterID):
	// with it, only records whose (updated_at, id) sorts after that pair
	// are kept. It requires updated_since and sort_by=updated_at ascending.
	AfterID *int64

	spec   Spec
	values url.Values
	errs   *validate.Errors
}

// Parse reads the common parameters; collection-specific filters are read
// afterwards with Int64, Enum, String; Err returns every problem at once.
func Parse(values url.Values, spec Spec) *Query {
	q := &Query{values: storable(values), spec: spec, errs: &validate.Errors{}, Page: 1, PerPage: DefaultPerPage}
	for name, vs := range values {
		for _, v := range vs {
			if msg := validate.Text(v); msg != "" && !q.errs.Has(name) {
				q.errs.Add(name, "%s", msg)
			}
		}
	}
	values = q.values
	if v := values.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		switch {
		case errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(v, "-"):
			// A page past every integer range is past the last page: an
			// empty page, like any other page after the end.
			q.Page = MaxPage
		case err != nil || n < 1:
			q.errs.Add("page", "must be an integer of at least 1")
		default:
			q.Page = min(n, MaxPage)
		}
	}
	if v := values.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil || n < 1:
			q.errs.Add("per_page", "must be an integer between 1 and %d", MaxPerPage)
		case n > MaxPerPage:
			q.PerPage = MaxPerPage
		default:
			q.PerPage = n
		}
	}
	q.Search = strings.TrimSpace(values.Get("search"))
	if len([]rune(q.Search)) > MaxSearch {
		q.errs.Add("search", "must be at most %d characters", MaxSearch)
	}
	q.SortBy = spec.DefaultSort
	if v := values.Get("sort_by"); v != "" {
		if _, ok := spec.Sorts[v]; !ok {
			q.errs.Add("sort_by", "must be one of %s", strings.Join(sortKeys(spec), ", "))
		} else {
			q.SortBy = v
		}
	}
	switch strings.ToUpper(values.Get("sort_dir")) {
	case "", "ASC":
	case "DESC":
		q.Desc = true
	default:
		q.errs.Add("sort_dir", "must be ASC or DESC")
	}
	q.DateFrom = q.errs.Date("date_from", values.Get("date_from"))
	if to := q.errs.Date("date_to", values.Get("date_to")); to != nil {
		next := to.AddDate(0, 0, 1)
		q.DateTo = &next
	}
	if q.DateFrom != nil && q.DateTo != nil && !q.DateFrom.Before(*q.DateTo) {
		q.errs.Add("date_to", "must not be before date_from")
	}
	q.Scope = q.Enum("scope", ScopeMe, ScopeTeam, ScopeCompany)
	if spec.Updated != "" {
		q.parseSince()
	}
	return q
}

// parseSince reads updated_since (RFC 3339, truncated to PostgreSQL's
// microseconds so the bound never rounds up past a record) and after_id,
// the keyset cursor that makes a sync page stably while records change.
func (q *Query) parseSince() {
	if v := q.values.Get("updated_since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		switch {
		case err != nil:
			q.errs.Add("updated_since", "must be an RFC 3339 timestamp such as 2026-01-02T15:04:05Z")
		case t.Year() < validate.MinYear:
			q.errs.Add("updated_since", "must be on or after %d-01-01", validate.MinYear)
		default:
			t = t.UTC().Truncate(time.Microsecond)
			q.UpdatedSince = &t
		}
	}
	q.AfterID = q.Int64("after_id")
	if q.AfterID != nil && (q.UpdatedSince == nil || q.SortBy != "updated_at" || q.Desc) {
		q.errs.Add("after_id", "requires updated_since, sort_by=updated_at and sort_dir=asc")
		q.AfterID = nil
	}
}

// Since adds the incremental sync filter to w, if the request has one:
// updated_at >= updated_since, or with after_id the row comparison
// (updated_at, id) > (updated_since, after_id), which a btree index on
// (updated_at, id) answers as one range.
func (q *Query) Since(w *Where) {
	if q.UpdatedSince == nil {
		return
	}
	if q.AfterID == nil {
		w.And(q.spec.Updated + " >= " + w.Arg(*q.UpdatedSince))
		return
	}
	w.And("(" + q.spec.Updated + ", " + q.tieBreak() + ") > (" + w.Arg(*q.UpdatedSince) + ", " + w.Arg(*q.AfterID) + ")")
}

// tieBreak is the Spec's tie-break column, "id" by default as in OrderBy.
func (q *Query) tieBreak() string {
	if q.spec.TieBreak == "" {
		return "id"
	}
	return q.spec.TieBreak
}

// storable drops the parameters whose values are not text PostgreSQL can
// compare against (Parse reports them), so no reader of the query ever
// puts one into a statement.
func storable(values url.Values) url.Values {
	out := url.Values{}
	for name, vs := range values {
		ok := true
		for _, v := range vs {
			ok = ok && validate.Text(v) == ""
		}
		if ok {
			out[name] = vs
		}
	}
	return out
}

func sortKeys(spec Spec) []string { return slices.Sorted(maps.Keys(spec.Sorts)) }

// Int64 reads an optional positive integer filter.
func (q *Query) Int64(name string) *int64 {
	v := q.values.Get(name)
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		q.errs.Add(name, "must be a positive integer")
		return nil
	}
	return &n
}

// Enum reads an optional value that must be one of allowed.
func (q *Query) Enum(name string, allowed ...string) string {
	v := q.values.Get(name)
	q.errs.OneOf(name, v, allowed...)
	if q.errs.Has(name) {
		return ""
	}
	return v
}

// EnumList reads a comma-separated list whose items must be in allowed.
func (q *Query) EnumList(name string, allowed ...string) []string {
	v := q.values.Get(name)
	if v == "" {
		return nil
	}
	var out []string
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if !q.errs.OneOf(name, item, allowed...) {
			return nil
		}
		out = append(out, item)
	}
	return out
}

// String reads an optional free-text filter of at most 255 characters.
func (q *Query) String(name string) string {
	v := strings.TrimSpace(q.values.Get(name))
	q.errs.MaxLen(name, v, validate.MaxString)
	return v
}

// Err returns a 422 problem listing every bad parameter, or nil.
func (q *Query) Err() error { return q.errs.Err() }

// MaxPage is the largest page number a query carries; a larger one (up to
// any number of digits) reads as MaxPage, which is past the end of any
// table. It keeps current_page an exact integer in every JSON reader.
const MaxPage = math.MaxInt32

// MaxOffset is the largest row offset: Offset()+PerPage still fits a
// PostgreSQL integer (int4), so a store that adds the page size to the
// offset in SQL (a LIMIT of offset+per_page rows per branch) never
// overflows.
const MaxOffset = math.MaxInt32 - MaxPerPage

// Offset is the row offset of the page. It saturates at MaxOffset (far past
// the end of any table, so the page is empty, as docs/api.md says) rather
// than overflowing on a huge page number.
func (q *Query) Offset() int {
	if q.Page-1 > MaxOffset/q.PerPage {
		return MaxOffset
	}
	return (q.Page - 1) * q.PerPage
}

// OrderBy returns "ORDER BY <expr> <dir>, <tiebreak> <dir>" from the
// whitelist. Nulls follow PostgreSQL's default (last ascending, first
// descending) so one btree index on (expr, tiebreak) serves both directions.
func (q *Query) OrderBy() string {
	dir := "ASC"
	if q.Desc {
		dir = "DESC"
	}
	expr := q.spec.Sorts[q.SortBy]
	tie := q.spec.TieBreak
	if tie == "" {
		tie = "id"
	}
	return fmt.Sprintf("ORDER BY %s %s, %s %s", expr, dir, tie, dir)
}

// LimitOffset returns the LIMIT/OFFSET clause as placeholders added to w.
func (q *Query) LimitOffset(w *Where) string {
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

// Page is the API's pagination envelope.
type Page[T any] struct {
	Data        []T `json:"data"`
	CurrentPage int `json:"current_page"`
	LastPage    int `json:"last_page"`
	PerPage     int `json:"per_page"`
	Total       int `json:"total"`
}

// NewPage wraps one page of items; data is never null and last_page ≥ 1.
func NewPage[T any](items []T, q *Query, total int) Page[T] {
	if items == nil {
		items = []T{}
	}
	last := (total + q.PerPage - 1) / q.PerPage
	if last < 1 {
		last = 1
	}
	return Page[T]{Data: items, CurrentPage: q.Page, LastPage: last, PerPage: q.PerPage, Total: total}
}

// EscapeLike escapes % _ and \ so a search term matches literally in ILIKE.
func EscapeLike(s string) string { return likeEscaper.Replace(s) }

// likeEscaper is built once: a Replacer is safe for concurrent use.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
