package htmldoc

import "testing"

// TestCleanCSSInvalidUTF8 is the regression test of a FuzzSanitize
// finding: invalid UTF-8 before url() shifted the offsets cleanCSS cut at,
// and a remote url() survived.
func TestCleanCSSInvalidUTF8(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"\xe2\xe2p{background:url(http://x.example/a.png)}", "\xe2\xe2p{background:none}"},
		{"\xffP{BACKGROUND:URL(http://x.example/a.png)}", "\xffP{BACKGROUND:none}"},
		{"\xe2\xe2url(", "\xe2\xe2"},
		{"\xff@import 'http://x';p{}", "\xffp{}"},
	}
	for _, tt := range tests {
		if got := cleanCSS(tt.in); got != tt.want {
			t.Errorf("cleanCSS(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
