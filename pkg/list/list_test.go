package list_test

import (
	"math"
	"testing"

	"github.com/opencrm/crm/pkg/list"
)

// TestOffset: the offset of a page, saturating at MaxOffset for a huge page
// number so the page is empty (past any table) and never an overflow into a
// negative or out-of-range offset: Offset()+PerPage still fits an int4.
func TestOffset(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		q    list.Query
		want int
	}{
		{"third page of 100", list.Query{Page: 3, PerPage: 100}, 200},
		{"page=9223372036854775807&per_page=2", list.Query{Page: math.MaxInt32, PerPage: 2}, list.MaxOffset},
		{"page=100000000&per_page=100", list.Query{Page: 100000000, PerPage: 100}, list.MaxOffset},
		// 85899346 × 25 fits an int4 but the offset plus a page does not.
		{"page=85899346", list.Query{Page: 85899346, PerPage: list.DefaultPerPage}, list.MaxOffset},
		{"page=2147483648 or more digits", list.Query{Page: math.MaxInt32, PerPage: list.DefaultPerPage}, list.MaxOffset},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.q.Offset(); got != tt.want {
				t.Errorf("Offset = %d, want %d", got, tt.want)
			}
			if tt.q.Offset()+tt.q.PerPage > math.MaxInt32 {
				t.Errorf("Offset+PerPage = %d overflows an int4", tt.q.Offset()+tt.q.PerPage)
			}
		})
	}
}

// TestLastPage: an empty collection still has one (empty) page.
func TestLastPage(t *testing.T) {
	t.Parallel()
	q := list.Query{Page: 1, PerPage: list.DefaultPerPage}
	tests := []struct {
		total, want int
	}{
		{0, 1},
		{51, 3},
	}
	for _, tt := range tests {
		if got := q.LastPage(tt.total); got != tt.want {
			t.Errorf("LastPage(%d) = %d, want %d", tt.total, got, tt.want)
		}
	}
}
