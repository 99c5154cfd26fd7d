package htmldoc_test

import (
	"strings"
	"testing"

	"github.com/opencrm/crm/services/render/internal/htmldoc"
)

func TestForcedBreaks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"none", `<p>a</p><p>b</p>`, 0},
		{"break after each", strings.Repeat(`<p style="break-after: page">x</p>`, 5), 5},
		{"legacy property and class", `<p>a</p><p style="page-break-before: always">b</p><hr class="page-break"><p>c</p>`, 2},
		{"break before the first content does not count", `<p style="break-before: page">a</p>`, 0},
		{"adjacent breaks collapse", `<p style="break-after: page">a</p><p style="break-before: page">b</p>`, 1},
		{"nested breaks at one point count once", `<div style="break-after: page"><p style="break-after: page">a</p></div>`, 1},
		{"empty boxes between breaks", `<p>a</p><hr class="page-break"><hr class="page-break"><div></div><hr class="page-break">`, 1},
		{"inline boxes do not break", strings.Repeat(`<span style="break-after: page">x</span>`, 5), 0},
		{"not in tables", `<table><tr><td><p style="break-after: page">x</p><p style="break-after: page">y</p></td></tr></table>`, 0},
		{"not out of flow or hidden", `<p style="display: none; break-after: page">x</p><div style="float: left"><p style="break-after: page">y</p></div>`, 0},
		{"hidden text is no content", `<p>a</p><hr class="page-break"><p style="display:none">h</p><hr class="page-break">`, 1},
		{"avoid is no break", strings.Repeat(`<p style="break-after: avoid">x</p>`, 5), 0},
		{"ten thousand", strings.Repeat(`<p style="break-after: page">x</p>`, 10_000), 10_000},
	}
	for _, tc := range tests {
		nodes, err := htmldoc.ParseClean(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := htmldoc.ForcedBreaks(nodes); got != tc.want {
			t.Errorf("%s: ForcedBreaks = %d, want %d", tc.name, got, tc.want)
		}
	}
}
