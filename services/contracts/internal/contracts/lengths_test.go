package contracts

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckLengths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string
	}{
		{`<p style="margin: 0 0 1em; padding: 4pt 8pt">x</p>`, ""},
		{`<div style="height: 297mm; width: 100%">x</div>`, ""},
		{`<div style="height: 9999mm">x</div>`, `style "height: 9999mm" is too large: lengths are at most 297mm (the height of an A4 page)`},
		{`<div style="HEIGHT:1200PX">x</div>`, `style "HEIGHT:1200PX" is too large: lengths are at most 297mm (the height of an A4 page)`},
		{`<div style="margin-top: 30cm">x</div>`, `style "margin-top: 30cm" is too large: lengths are at most 297mm (the height of an A4 page)`},
		{`<div style="padding-bottom: 1e4pt">x</div>`, `style "padding-bottom: 1e4pt" is too large: lengths are at most 297mm (the height of an A4 page)`},
		{`<p style="font-size: 500em">x</p>`, `style "font-size: 500em" is too large: relative lengths are at most 20em`},
		{`<p style="line-height: 999">x</p>`, `style "line-height: 999" is too large: a line height is at most 10 times the font size`},
		{`<p style="height: 5000%">x</p>`, `style "height: 5000%" is too large: percentages are at most 400%`},
		{`<p style="height: 900vh">x</p>`, `style "height: 900vh" is too large: percentages are at most 400%`},
		{`<p style="color: #123456; border: 1px solid rgb(200, 200, 200); font-weight: 700">x</p>`, ""},
		{`<img height="99999" src="data:image/png;base64,AA==">`, `attribute height="99999" is too large: at most 1123`},
		{`<td width="50%">x</td>`, ""},
		{`<p style="margin-top: -9999mm">x</p>`, `style "margin-top: -9999mm" is too large: lengths are at most 297mm (the height of an A4 page)`},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, CheckLengths(tc.in)); diff != "" {
			t.Errorf("CheckLengths(%s) (-want +got):\n%s", tc.in, diff)
		}
	}
}
