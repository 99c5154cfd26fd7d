package listq_test

import (
	"math"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/listq"
	"github.com/opencrm/crm/pkg/problem"
)

var spec = listq.Spec{Sorts: map[string]string{"name": "lower(name)", "created_at": "created_at"}, DefaultSort: "name"}

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
		v, _ := url.ParseQuery(tt.query)
		err := listq.Parse(v, spec).Err()
		p := problem.From(err)
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

func TestParseValues(t *testing.T) {
	t.Parallel()
	v, _ := url.ParseQuery("page=3&per_page=500&sort_by=created_at&sort_dir=desc&date_to=2026-01-31&search=%20ann%20")
	q := listq.Parse(v, spec)
	if err := q.Err(); err != nil {
		t.Fatal(err)
	}
	if q.Page != 3 || q.PerPage != 100 || !q.Desc || q.SortBy != "created_at" || q.Search != "ann" {
		t.Errorf("parsed %+v", q)
	}
	if got := q.DateTo.Format("2006-01-02"); got != "2026-02-01" {
		t.Errorf("date_to is inclusive: next day = %s", got)
	}
	if got, want := q.OrderBy(), "ORDER BY created_at DESC, id DESC"; got != want {
		t.Errorf("OrderBy = %q, want %q", got, want)
	}
	if q.Offset() != 200 {
		t.Errorf("Offset = %d", q.Offset())
	}
}

func TestNewPage(t *testing.T) {
	t.Parallel()
	q := listq.Parse(url.Values{}, spec)
	got := listq.NewPage[int](nil, q, 0)
	want := listq.Page[int]{Data: []int{}, CurrentPage: 1, LastPage: 1, PerPage: 25, Total: 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if p := listq.NewPage([]int{1}, q, 51); p.LastPage != 3 {
		t.Errorf("LastPage = %d", p.LastPage)
	}
}

func TestWhere(t *testing.T) {
	t.Parallel()
	var w listq.Where
	w.And("status = " + w.Arg("active"))
	w.And("name ILIKE " + w.Arg("%"+listq.EscapeLike("50%_off")+"%"))
	if got, want := w.SQL(), "WHERE status = $1 AND name ILIKE $2"; got != want {
		t.Errorf("SQL = %q", got)
	}
	if diff := cmp.Diff([]any{"active", `%50\%\_off%`}, w.Args()); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
}

// TestOffsetSaturates: a huge page number gives an offset past any table
// (an empty page), never an overflow into a negative or out-of-range one.
func TestOffsetSaturates(t *testing.T) {
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
	for _, tc := range tests {
		v, _ := url.ParseQuery(tc.query)
		q := listq.Parse(v, spec)
		if err := q.Err(); err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		if q.Page != tc.wantPage {
			t.Errorf("%s: Page = %d, want %d", tc.query, q.Page, tc.wantPage)
		}
		if got := q.Offset(); got != listq.MaxOffset {
			t.Errorf("%s: Offset = %d, want %d", tc.query, got, listq.MaxOffset)
		}
		if q.Offset()+q.PerPage > math.MaxInt32 {
			t.Errorf("%s: Offset+PerPage = %d overflows an int4", tc.query, q.Offset()+q.PerPage)
		}
	}
	// A negative page past the range is still a bad page, not an empty one.
	v, _ := url.ParseQuery("page=-99999999999999999999999")
	if p := problem.From(listq.Parse(v, spec).Err()); p.Status != 422 {
		t.Errorf("negative huge page: status %d, want 422", p.Status)
	}
}

// TestUnstorableValuesNeverReachReaders: a parameter refused for its text
// reads as absent, so no filter can carry it into a statement.
func TestUnstorableValuesNeverReachReaders(t *testing.T) {
	t.Parallel()
	v, _ := url.ParseQuery("source=a%00b&search=x%FF")
	q := listq.Parse(v, spec)
	if got := q.String("source"); got != "" {
		t.Errorf("source = %q, want empty", got)
	}
	if q.Search != "" {
		t.Errorf("search = %q, want empty", q.Search)
	}
}

var syncSpec = listq.Spec{
	Sorts:       map[string]string{"name": "lower(name)", "updated_at": "c.updated_at"},
	DefaultSort: "name",
	TieBreak:    "c.id",
	Updated:     "c.updated_at",
}

// TestSinceErrors: a bad updated_since or a cursor outside the sync order
// is a 422 naming the parameter, with the message a client can act on.
func TestSinceErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query string
		want  []problem.FieldError
	}{
		{"updated_since=yesterday", []problem.FieldError{{Field: "updated_since", Message: "must be an RFC 3339 timestamp such as 2026-01-02T15:04:05Z"}}},
		{"updated_since=2026-01-02", []problem.FieldError{{Field: "updated_since", Message: "must be an RFC 3339 timestamp such as 2026-01-02T15:04:05Z"}}},
		{"updated_since=2026-01-02T15:04:05", []problem.FieldError{{Field: "updated_since", Message: "must be an RFC 3339 timestamp such as 2026-01-02T15:04:05Z"}}},
		{"updated_since=0999-12-31T23:59:59Z", []problem.FieldError{{Field: "updated_since", Message: "must be on or after 1000-01-01"}}},
		{"updated_since=2026-01-02T15:04:05Z&after_id=0&sort_by=updated_at", []problem.FieldError{{Field: "after_id", Message: "must be a positive integer"}}},
		{"after_id=5&sort_by=updated_at", []problem.FieldError{{Field: "after_id", Message: "requires updated_since, sort_by=updated_at and sort_dir=asc"}}},
		{"updated_since=2026-01-02T15:04:05Z&after_id=5", []problem.FieldError{{Field: "after_id", Message: "requires updated_since, sort_by=updated_at and sort_dir=asc"}}},
		{"updated_since=2026-01-02T15:04:05Z&after_id=5&sort_by=updated_at&sort_dir=desc", []problem.FieldError{{Field: "after_id", Message: "requires updated_since, sort_by=updated_at and sort_dir=asc"}}},
	}
	for _, tt := range tests {
		v, _ := url.ParseQuery(tt.query)
		p := problem.From(listq.Parse(v, syncSpec).Err())
		if p.Status != 422 {
			t.Fatalf("%s: status %d", tt.query, p.Status)
		}
		if diff := cmp.Diff(tt.want, p.Errors); diff != "" {
			t.Errorf("%s errors (-want +got):\n%s", tt.query, diff)
		}
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
		spec     listq.Spec
		wantSQL  string
		wantArgs []any
	}{
		{"updated_since=2026-01-02T15:04:05.123456789%2B01:00", syncSpec, "WHERE c.updated_at >= $1", []any{since}},
		{"updated_since=2026-01-02T14:04:05.123456Z&sort_by=updated_at&sort_dir=asc&after_id=42", syncSpec,
			"WHERE (c.updated_at, c.id) > ($1, $2)", []any{since, int64(42)}},
		{"sort_by=updated_at", syncSpec, "", nil},
		{"updated_since=nonsense&after_id=1", spec, "", nil},
	}
	for _, tt := range tests {
		v, _ := url.ParseQuery(tt.query)
		q := listq.Parse(v, tt.spec)
		if err := q.Err(); err != nil {
			t.Fatalf("%s: %v", tt.query, err)
		}
		var w listq.Where
		q.Since(&w)
		if got := w.SQL(); got != tt.wantSQL {
			t.Errorf("%s: SQL = %q, want %q", tt.query, got, tt.wantSQL)
		}
		if diff := cmp.Diff(tt.wantArgs, w.Args()); diff != "" {
			t.Errorf("%s args (-want +got):\n%s", tt.query, diff)
		}
	}
}
