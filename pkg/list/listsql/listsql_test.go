package listsql_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/list/listparam"
	"github.com/opencrm/crm/pkg/list/listsql"
)

// plain is a collection without incremental sync; synced has it, on a
// joined table's columns.
var (
	plain  = listsql.Sorts{By: map[string]string{"name": "lower(name)", "created_at": "created_at"}}
	synced = listsql.Sorts{
		By:       map[string]string{"name": "lower(name)", "updated_at": "c.updated_at"},
		TieBreak: "c.id",
		Updated:  "c.updated_at",
	}
)

// parse reads query at the edge as a service with sorts does.
func parse(t *testing.T, query string, sorts listsql.Sorts) list.Query {
	t.Helper()
	v, err := url.ParseQuery(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	p := listparam.Parse(v, listparam.Options{Sorts: sorts.Keys(), DefaultSort: "name", Sync: sorts.Updated != ""})
	if err := p.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return p.Query()
}

// TestOrderBy: the sort key's whitelisted expression in the asked
// direction, then the tie-break ("id" by default) in the same direction.
func TestOrderBy(t *testing.T) {
	t.Parallel()
	q := parse(t, "page=3&per_page=500&sort_by=created_at&sort_dir=desc&date_to=2026-01-31&search=%20ann%20", plain)
	if got, want := plain.OrderBy(q), "ORDER BY created_at DESC, id DESC"; got != want {
		t.Errorf("OrderBy = %q, want %q", got, want)
	}
	var w listsql.Where
	if got, want := listsql.LimitOffset(&w, q), "LIMIT $1 OFFSET $2"; got != want {
		t.Errorf("LimitOffset = %q, want %q", got, want)
	}
	if diff := cmp.Diff([]any{100, 200}, w.Args()); diff != "" {
		t.Errorf("LimitOffset args (-want +got):\n%s", diff)
	}
}

func TestWhere(t *testing.T) {
	t.Parallel()
	var w listsql.Where
	w.And("status = " + w.Arg("active"))
	w.And("name ILIKE " + w.Arg("%"+listsql.EscapeLike("50%_off")+"%"))
	if got, want := w.SQL(), "WHERE status = $1 AND name ILIKE $2"; got != want {
		t.Errorf("SQL = %q, want %q", got, want)
	}
	if diff := cmp.Diff([]any{"active", `%50\%\_off%`}, w.Args()); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
}

// TestSince: updated_since is inclusive (>=); with after_id it becomes the
// keyset condition on (updated_at, id); a collection without Updated
// ignores both parameters as it ignores any unknown one.
func TestSince(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 1, 2, 14, 4, 5, 123456000, time.UTC)
	tests := []struct {
		query    string
		sorts    listsql.Sorts
		wantSQL  string
		wantArgs []any
	}{
		{"updated_since=2026-01-02T15:04:05.123456789%2B01:00", synced, "WHERE c.updated_at >= $1", []any{since}},
		{"updated_since=2026-01-02T14:04:05.123456Z&sort_by=updated_at&sort_dir=asc&after_id=42", synced,
			"WHERE (c.updated_at, c.id) > ($1, $2)", []any{since, int64(42)}},
		{"sort_by=updated_at", synced, "", nil},
		{"updated_since=nonsense&after_id=1", plain, "", nil},
	}
	for _, tt := range tests {
		q := parse(t, tt.query, tt.sorts)
		var w listsql.Where
		tt.sorts.Since(&w, q)
		if got := w.SQL(); got != tt.wantSQL {
			t.Errorf("%s: SQL = %q, want %q", tt.query, got, tt.wantSQL)
		}
		if diff := cmp.Diff(tt.wantArgs, w.Args()); diff != "" {
			t.Errorf("%s args (-want +got):\n%s", tt.query, diff)
		}
	}
}

func TestSearchWalk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                string
		need, rows, matches int
		want                int
		ok                  bool
	}{
		{"one in eight, first page", 50, 1_000_000, 125_000, 850, true},
		{"every row matches", 50, 1_000_000, 1_000_000, 150, true},
		{"walk capped at the filter's rows", 50, 100, 90, 100, true},
		{"narrow term", 50, 1_000_000, 1_000, 0, false},
		{"deep page of a broad term", 5_000, 1_000_000, 125_000, 0, false},
		{"just within the bound", 50, 1_000_000, 10_100, 9_952, true},
		{"just past the bound", 50, 1_000_000, 10_050, 0, false},
		{"nothing matches", 50, 1_000_000, 0, 0, false},
		{"rows behind matches (a stale estimate)", 50, 10, 20, 0, false},
		{"no page", 0, 100, 10, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := listsql.SearchWalk(tt.need, tt.rows, tt.matches)
			if got != tt.want || ok != tt.ok {
				t.Errorf("SearchWalk(%d, %d, %d) = %d, %v; want %d, %v", tt.need, tt.rows, tt.matches, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestSearchPage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                string
		need, rows, matches int
		found               []int64 // what the walk finds
		wantWalk            int     // rows walked, 0 for none
		want                []int64
		walked, ok          bool
	}{
		{"the page within the walk", 3, 1_000, 125, []int64{4, 9, 12}, 51, []int64{4, 9, 12}, true, true},
		{"short of the page before the filter's end", 3, 1_000, 125, []int64{4}, 51, nil, true, false},
		{"short of the page at the filter's end", 3, 8, 8, []int64{4}, 8, []int64{4}, true, true},
		{"no walk bounded", 50, 1_000_000, 1_000, nil, 0, nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			walkedRows := 0
			got, walked, ok, err := listsql.SearchPage(tt.need, tt.rows, tt.matches, func(n int) ([]int64, error) {
				walkedRows = n
				return tt.found, nil
			})
			if err != nil || walked != tt.walked || ok != tt.ok || walkedRows != tt.wantWalk {
				t.Errorf("SearchPage = walked %v, found %v, %v after %d rows; want %v, %v after %d",
					walked, ok, err, walkedRows, tt.walked, tt.ok, tt.wantWalk)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}
}
