package listparam_test

import (
	"math"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/list/listparam"
	"github.com/opencrm/crm/pkg/list/listsql"
	"github.com/opencrm/crm/pkg/problem"
)

// sorts is a collection without incremental sync, as the edge and the
// store of a service declare it.
var (
	sorts = listsql.Sorts{By: map[string]string{"name": "lower(name)", "created_at": "created_at"}}
	opts  = listparam.Options{Sorts: sorts.Keys(), DefaultSort: "name"}
)

// syncOpts is a collection with incremental sync (updated_since, after_id).
var syncOpts = listparam.Options{Sorts: []string{"name", "updated_at"}, DefaultSort: "name", Sync: true}

func parse(t *testing.T, query string, o listparam.Options) *listparam.Parser {
	t.Helper()
	v, err := url.ParseQuery(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return listparam.Parse(v, o)
}

// TestParseErrors: every bad parameter is a 422 naming it.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query      string
		wantFields []string
	}{
		{"per_page=abc", []string{"per_page"}},
		{"page=0", []string{"page"}},
		{"sort_by=password", []string{"sort_by"}},
		{"sort_dir=sideways", []string{"sort_dir"}},
		{"date_from=2026-02-30", []string{"date_from"}},
		{"date_from=2026-03-02&date_to=2026-03-01", []string{"date_to"}},
		{"scope=everyone&page=-1", []string{"page", "scope"}},
		{"search=%00", []string{"search"}},
		{"search=%FF", []string{"search"}},
		{"source=%C3", []string{"source"}},
	}
	for _, tt := range tests {
		p := problem.From(parse(t, tt.query, opts).Err())
		if p.Status != 422 {
			t.Fatalf("%s: status %d", tt.query, p.Status)
		}
		var got []string
		for _, fe := range p.Errors {
			got = append(got, fe.Field)
		}
		if diff := cmp.Diff(tt.wantFields, got); diff != "" {
			t.Errorf("%s fields (-want +got):\n%s", tt.query, diff)
		}
	}
}

// TestParseValues: per_page is capped, sort_dir is case-insensitive, the
// search is trimmed and date_to is inclusive (moved to the next day).
func TestParseValues(t *testing.T) {
	t.Parallel()
	p := parse(t, "page=3&per_page=500&sort_by=created_at&sort_dir=desc&date_to=2026-01-31&search=%20ann%20", opts)
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	nextDay := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	want := list.Query{Page: 3, PerPage: 100, Search: "ann", SortBy: "created_at", Desc: true, DateTo: &nextDay}
	if diff := cmp.Diff(want, p.Query()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := p.Query().Offset(); got != 200 {
		t.Errorf("Offset = %d", got)
	}
}

// TestHugePage: a page number past the int range reads as the last page a
// query carries (an empty page past any table), never an overflow.
func TestHugePage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query    string
		wantPage int
	}{
		{"page=9223372036854775807&per_page=2", math.MaxInt32},
		{"page=100000000&per_page=100", 100000000},
		// 85899346 × 25 fits an int4 but the offset plus a page does not.
		{"page=85899346", 85899346},
		{"page=2147483648", math.MaxInt32},
		{"page=99999999999999999999999999999", math.MaxInt32},
	}
	for _, tt := range tests {
		p := parse(t, tt.query, opts)
		if err := p.Err(); err != nil {
			t.Fatalf("%s: %v", tt.query, err)
		}
		q := p.Query()
		if q.Page != tt.wantPage {
			t.Errorf("%s: Page = %d, want %d", tt.query, q.Page, tt.wantPage)
		}
		if got := q.Offset(); got != list.MaxOffset {
			t.Errorf("%s: Offset = %d, want %d", tt.query, got, list.MaxOffset)
		}
		if q.Offset()+q.PerPage > math.MaxInt32 {
			t.Errorf("%s: Offset+PerPage = %d overflows an int4", tt.query, q.Offset()+q.PerPage)
		}
	}
	// A negative page past the range is still a bad page, not an empty one.
	if p := problem.From(parse(t, "page=-99999999999999999999999", opts).Err()); p.Status != 422 {
		t.Errorf("negative huge page: status %d, want 422", p.Status)
	}
}

// TestUnstorableValuesNeverReachReaders: a parameter refused for its text
// reads as absent, so no filter can carry it into a statement.
func TestUnstorableValuesNeverReachReaders(t *testing.T) {
	t.Parallel()
	p := parse(t, "source=a%00b&search=x%FF", opts)
	if got := p.String("source"); got != "" {
		t.Errorf("source = %q, want empty", got)
	}
	if got := p.Query().Search; got != "" {
		t.Errorf("search = %q, want empty", got)
	}
}

// TestSinceErrors: a bad updated_since or a cursor outside the sync order
// is a 422 naming the parameter, with the message a client can act on.
func TestSinceErrors(t *testing.T) {
	t.Parallel()
	const (
		notRFC3339    = "must be an RFC 3339 timestamp such as 2026-01-02T15:04:05Z"
		outsideCursor = "requires updated_since, sort_by=updated_at and sort_dir=asc"
	)
	tests := []struct {
		query string
		want  []problem.FieldError
	}{
		{"updated_since=yesterday", []problem.FieldError{{Field: "updated_since", Message: notRFC3339}}},
		{"updated_since=2026-01-02", []problem.FieldError{{Field: "updated_since", Message: notRFC3339}}},
		{"updated_since=2026-01-02T15:04:05", []problem.FieldError{{Field: "updated_since", Message: notRFC3339}}},
		{"updated_since=0999-12-31T23:59:59Z", []problem.FieldError{{Field: "updated_since", Message: "must be on or after 1000-01-01"}}},
		{"updated_since=2026-01-02T15:04:05Z&after_id=0&sort_by=updated_at", []problem.FieldError{{Field: "after_id", Message: "must be a positive integer"}}},
		{"after_id=5&sort_by=updated_at", []problem.FieldError{{Field: "after_id", Message: outsideCursor}}},
		{"updated_since=2026-01-02T15:04:05Z&after_id=5", []problem.FieldError{{Field: "after_id", Message: outsideCursor}}},
		{"updated_since=2026-01-02T15:04:05Z&after_id=5&sort_by=updated_at&sort_dir=desc", []problem.FieldError{{Field: "after_id", Message: outsideCursor}}},
	}
	for _, tt := range tests {
		p := problem.From(parse(t, tt.query, syncOpts).Err())
		if p.Status != 422 {
			t.Fatalf("%s: status %d", tt.query, p.Status)
		}
		if diff := cmp.Diff(tt.want, p.Errors); diff != "" {
			t.Errorf("%s errors (-want +got):\n%s", tt.query, diff)
		}
	}
}

// FuzzParse feeds arbitrary query strings to the list-query parser: it
// must never panic; a rejected query is a 422 problem; an accepted one has
// page and per_page in range, a whitelisted sort key, text parameters that
// are valid UTF-8 without NUL, and an ORDER BY and LIMIT built (by listsql)
// only from trusted text and placeholders.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "page=2&per_page=50&search=acme&sort_by=created_at&sort_dir=desc",
		"per_page=100000&page=99999999999999999999", "sort_by=name;DROP TABLE x",
		"date_from=2026-01-01&date_to=2025-12-31", "scope=team&search=%00", "search=%FF%FE",
		"search=" + strings.Repeat("x", 300), "sort_dir=dEsC&scope=me", "page=-1&per_page=0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		values, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		p := listparam.Parse(values, opts)
		if err := p.Err(); err != nil {
			if pr := problem.From(err); pr.Status != 422 {
				t.Fatalf("%q: status %d, want 422", raw, pr.Status)
			}
			return
		}
		q := p.Query()
		if q.Page < 1 || q.PerPage < 1 || q.PerPage > list.MaxPerPage {
			t.Fatalf("%q: page %d per_page %d out of range", raw, q.Page, q.PerPage)
		}
		if _, ok := sorts.By[q.SortBy]; !ok || !slices.Contains(opts.Sorts, q.SortBy) {
			t.Fatalf("%q: sort key %q is not whitelisted", raw, q.SortBy)
		}
		if !utf8.ValidString(q.Search) || strings.IndexByte(q.Search, 0) >= 0 {
			t.Fatalf("%q: search %q is not clean text", raw, q.Search)
		}
		order := sorts.OrderBy(q)
		if strings.Contains(order, q.Search) && q.Search != "" && !strings.Contains(sorts.By[q.SortBy], q.Search) {
			t.Fatalf("%q: ORDER BY %q carries user text", raw, order)
		}
		var w listsql.Where
		if lim := listsql.LimitOffset(&w, q); strings.ContainsAny(lim, "'\";") {
			t.Fatalf("%q: LIMIT clause %q is not placeholders", raw, lim)
		}
		_ = q.Offset()
	})
}
