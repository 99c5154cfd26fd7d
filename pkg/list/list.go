// Package list is the plain part of a list request that every collection
// shares: which page, the search term, the sort and the common filters.
// It knows neither URLs nor SQL: the edge fills it (package listparam), a
// context's domain filter embeds it, and the store turns it into SQL
// (package listsql), where custom-field filters will slot in the same way.
package list

import (
	"math"
	"time"
)

// Limits of every list (docs/api.md).
const (
	DefaultPerPage = 25
	MaxPerPage     = 100
	// MaxSearch bounds the search term; longer terms cannot be useful.
	MaxSearch = 200
	// MaxPage is the largest page number a query carries; a larger one (up
	// to any number of digits) reads as MaxPage, which is past the end of
	// any table. It keeps current_page an exact integer in every JSON reader.
	MaxPage = math.MaxInt32
	// MaxOffset is the largest row offset: Offset()+PerPage still fits a
	// PostgreSQL integer (int4), so a store that adds the page size to the
	// offset in SQL never overflows.
	MaxOffset = math.MaxInt32 - MaxPerPage
)

// Scope values: whose records (assigned to me, my team, anyone).
const (
	ScopeMe      = "me"
	ScopeTeam    = "team"
	ScopeCompany = "company"
)

// Query is one page of a collection as the caller asked for it.
type Query struct {
	Page, PerPage int
	Search        string
	// SortBy is a key of the collection's sort whitelist.
	SortBy string
	Desc   bool
	// DateFrom and DateTo are inclusive UTC days; DateTo is already moved
	// to the start of the next day for a half-open comparison.
	DateFrom, DateTo *time.Time
	Scope            string
	// UpdatedSince keeps records updated at or after it (inclusive).
	UpdatedSince *time.Time
	// AfterID resumes a sync after the record (UpdatedSince, AfterID):
	// only records whose (updated_at, id) sorts after that pair are kept.
	AfterID *int64
}

// First is the first page of size perPage sorted by sortBy, for callers
// inside the service (exports, batch jobs) that build a query themselves.
func First(perPage int, sortBy string) Query {
	return Query{Page: 1, PerPage: perPage, SortBy: sortBy}
}

// Offset is the row offset of the page. It saturates at MaxOffset (far past
// the end of any table, so the page is empty, as docs/api.md says) rather
// than overflowing on a huge page number.
func (q Query) Offset() int {
	if q.PerPage < 1 {
		return 0
	}
	if q.Page-1 > MaxOffset/q.PerPage {
		return MaxOffset
	}
	return max(q.Page-1, 0) * q.PerPage
}

// LastPage is the number of the last page for total records (at least 1).
func (q Query) LastPage(total int) int {
	if q.PerPage < 1 {
		return 1
	}
	return max((total+q.PerPage-1)/q.PerPage, 1)
}
