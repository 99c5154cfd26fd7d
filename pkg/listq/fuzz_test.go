package listq_test

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/opencrm/crm/pkg/listq"
	"github.com/opencrm/crm/pkg/problem"
)

// FuzzParse feeds arbitrary query strings to the list-query parser: it
// must never panic; a rejected query is a 422 problem; an accepted one has
// page and per_page in range, a whitelisted sort key, text parameters that
// are valid UTF-8 without NUL, and an ORDER BY and LIMIT built only from
// trusted text and placeholders.
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
		q := listq.Parse(values, spec)
		if err := q.Err(); err != nil {
			if p := problem.From(err); p.Status != 422 {
				t.Fatalf("%q: status %d, want 422", raw, p.Status)
			}
			return
		}
		if q.Page < 1 || q.PerPage < 1 || q.PerPage > listq.MaxPerPage {
			t.Fatalf("%q: page %d per_page %d out of range", raw, q.Page, q.PerPage)
		}
		if _, ok := spec.Sorts[q.SortBy]; !ok {
			t.Fatalf("%q: sort key %q is not whitelisted", raw, q.SortBy)
		}
		if !utf8.ValidString(q.Search) || strings.IndexByte(q.Search, 0) >= 0 {
			t.Fatalf("%q: search %q is not clean text", raw, q.Search)
		}
		order := q.OrderBy()
		if strings.Contains(order, q.Search) && q.Search != "" && !strings.Contains(spec.Sorts[q.SortBy], q.Search) {
			t.Fatalf("%q: ORDER BY %q carries user text", raw, order)
		}
		var w listq.Where
		if lim := q.LimitOffset(&w); strings.ContainsAny(lim, "'\";") {
			t.Fatalf("%q: LIMIT clause %q is not placeholders", raw, lim)
		}
		_ = q.Offset()
	})
}
