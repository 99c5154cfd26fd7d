// Package listtest checks a list's pages and an export's rows against the
// ids a plain query gives, for the stores' tests of their list strategies
// (a projection, an index walk, the count cube): each strategy must answer
// exactly what the straightforward query would.
package listtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// PerPage is the page size Pages reads with: small, so a few dozen
// matches give a first, second, last and past-the-end page.
const PerPage = 7

// Lister reads one page of the list under test: its ids in list order and
// the total it reports.
type Lister func(page, perPage int) (ids []int64, total int, err error)

// Pages reads pages 1, 2, the last and one past the end through list and
// compares each with the same slice of want, and each total with
// len(want). name prefixes every failure.
func Pages(t *testing.T, name string, want []int64, list Lister) {
	t.Helper()
	last := len(want)/PerPage + 1
	for _, page := range []int{1, 2, last, last + 2} {
		ids, total, err := list(page, PerPage)
		if err != nil {
			t.Fatalf("%s page %d: %v", name, page, err)
		}
		wantPage := want[min((page-1)*PerPage, len(want)):min(page*PerPage, len(want))]
		if ids == nil {
			ids = []int64{}
		}
		if diff := cmp.Diff(wantPage, ids); diff != "" || total != len(want) {
			t.Errorf("%s page %d: total %d, want %d; ids (-want +got):\n%s", name, page, total, len(want), diff)
		}
	}
}

// CSVIDs returns the first cell of every line of an export's rows (no
// header line), read as an id.
func CSVIDs(t *testing.T, name, rows string) []int64 {
	t.Helper()
	var ids []int64
	for _, line := range strings.Split(strings.TrimSuffix(rows, "\n"), "\n") {
		var id int64
		if _, err := fmt.Sscanf(strings.SplitN(line, ",", 2)[0], "%d", &id); err != nil {
			t.Fatalf("%s: export line %q: %v", name, line, err)
		}
		ids = append(ids, id)
	}
	return ids
}
