package docx_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/services/render/internal/docx"
)

// FuzzRender converts arbitrary HTML, title and header/footer cells: it
// must never panic, and every document it returns must be a zip whose
// parts are all well-formed XML (what Word refuses to open otherwise).
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		`<h1>Licence</h1><p>Between <b>Acme</b> &amp; <i>Globex</i></p><ul><li>one</li></ul>`,
		`<table><tr><td rowspan=2>a</td><td>b</td></tr><tr><td>c</td></tr></table>`,
		`<p>{{page}} of {{pages}}</p><img src="data:image/png;base64,iVBORw0KGgo=">`,
		"<p>\x00\x01\x0b\uFFFE\ud7ff</p>", `<ol><li><ol><li><p>deep</p></li></ol></li></ol>`,
		`<pre>  keep   spaces
line</pre><br><hr><sup>1</sup><sub>2</sub>`, `]]><![CDATA[<w:p>`, `<a href="data:,x">link</a>`,
	} {
		f.Add(s, "Title & <co>", "{{page}}/{{pages}}")
	}
	f.Fuzz(func(t *testing.T, body, title, cell string) {
		job := renderq.Job{Format: renderq.DOCX, Title: title, HTML: body,
			Header: [3]string{cell, title, ""}, Footer: [3]string{"", cell, "{{page}}"}}
		out, err := docx.Render(job)
		if err != nil {
			return
		}
		unzip(t, out)
	})
}
