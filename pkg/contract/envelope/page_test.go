package envelope_test

import (
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/list/listparam"
)

// TestNewPage: data is never null and last_page is at least 1, so an empty
// collection renders as one empty page.
func TestNewPage(t *testing.T) {
	t.Parallel()
	q := listparam.Parse(url.Values{}, listparam.Options{Sorts: []string{"name", "created_at"}, DefaultSort: "name"}).Query()
	tests := []struct {
		name  string
		items []int
		total int
		want  envelope.Page[int]
	}{
		{"empty", nil, 0, envelope.Page[int]{Data: []int{}, CurrentPage: 1, LastPage: 1, PerPage: 25, Total: 0}},
		{"51 records", []int{1}, 51, envelope.Page[int]{Data: []int{1}, CurrentPage: 1, LastPage: 3, PerPage: 25, Total: 51}},
	}
	for _, tt := range tests {
		got := envelope.NewPage(tt.items, q, tt.total)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}
