package pdf

import (
	stdhtml "html"
	"strings"

	"golang.org/x/net/html"

	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/services/render/internal/htmldoc"
)

// csp is the Content-Security-Policy of every rendered document: nothing may
// be fetched except data: images and fonts, no script runs, nothing is
// framed, no form posts. It is the second of three walls (sanitiser, CSP,
// Fetch-domain blocking).
const csp = "default-src 'none'; img-src data:; font-src data:; style-src 'unsafe-inline'; " +
	"script-src 'none'; frame-src 'none'; form-action 'none'; base-uri 'none'"

// fontStack prefers Liberation Sans (metric-compatible with Arial, which the
// DOCX names) and falls back to DejaVu Sans for scripts Liberation lacks. Both
// are installed in the image, so output is identical on every machine.
const fontStack = `"Liberation Sans", "DejaVu Sans", sans-serif`

const pageCSS = `
html { -webkit-print-color-adjust: exact; }
body { margin: 0; font-family: ` + fontStack + `; font-size: 10.5pt; line-height: 1.45; color: #000; }
h1 { font-size: 18pt; } h2 { font-size: 15pt; } h3 { font-size: 13pt; }
h1, h2, h3, h4, h5, h6 { break-after: avoid; margin: 1em 0 0.5em; }
p { margin: 0 0 0.6em; orphans: 3; widows: 3; }
table { border-collapse: collapse; width: 100%; margin: 0 0 0.8em; }
th, td { border: 1px solid #888; padding: 3pt 5pt; vertical-align: top; text-align: left; }
tr { break-inside: avoid; }
img { max-width: 100%; }
.page-break, hr.page-break { break-after: page; border: 0; margin: 0; }
`

// Document wraps the sanitised fragment into the page that is printed.
func Document(job renderq.Job) (string, error) {
	doc, _, err := document(job)
	return doc, err
}

// document is Document plus the forced page breaks of the content (see
// htmldoc.ForcedBreaks), counted on the same parse.
func document(job renderq.Job) (string, int, error) {
	nodes, err := htmldoc.ParseClean(job.HTML)
	if err != nil {
		return "", 0, err
	}
	var body strings.Builder
	for _, n := range nodes {
		if err := html.Render(&body, n); err != nil {
			return "", 0, err
		}
	}
	return wrap(job, body.String()), htmldoc.ForcedBreaks(nodes), nil
}

// wrap puts the sanitised body into the printed page. The <title> becomes
// the PDF's Info /Title (shown as the window title: Chromium sets
// /DisplayDocTitle), and <html lang> the tagged PDF's /Lang, which screen
// readers need to pronounce the text. Job.Validate admits only BCP 47 tags;
// the language is escaped all the same.
func wrap(job renderq.Job, body string) string {
	var b strings.Builder
	b.Grow(len(body) + 1024)
	b.WriteString(`<!DOCTYPE html><html lang="` + stdhtml.EscapeString(job.Language()) + `"><head><meta charset="utf-8">`)
	b.WriteString(`<meta http-equiv="Content-Security-Policy" content="` + csp + `">`)
	b.WriteString(`<title>` + stdhtml.EscapeString(job.Title) + `</title><style>` + pageCSS + `</style></head><body>`)
	b.WriteString(body)
	b.WriteString(`</body></html>`)
	return b.String()
}

// band renders a header or footer as Chromium's print template: three cells
// of escaped text in which {{page}} and {{pages}} become the pageNumber and
// totalPages spans that Chromium fills per page. The template is laid out in
// the page margin, so it repeats the 20 mm side margins itself, and it needs
// an explicit font size (Chromium's default there is unreadably small).
func band(cells [3]string, top bool) string {
	align := [3]string{"left", "center", "right"}
	pad := "padding-bottom: 6mm;"
	valign := "flex-end"
	if top {
		pad = "padding-top: 8mm;"
		valign = "flex-start"
	}
	var b strings.Builder
	b.WriteString(`<div style="box-sizing: border-box; width: 100%; height: 100%; padding-left: 20mm; padding-right: 20mm; display: flex; align-items: ` +
		valign + `; gap: 4mm; font-family: ` + stdhtml.EscapeString(fontStack) + `; font-size: 8pt; color: #333; ` + pad + `">`)
	for i, cell := range cells {
		b.WriteString(`<div style="flex: 1 1 0; text-align: ` + align[i] + `;">`)
		for _, part := range renderq.SplitPlaceholders(cell) {
			switch part {
			case renderq.PagePlaceholder:
				b.WriteString(`<span class="pageNumber"></span>`)
			case renderq.PagesPlaceholder:
				b.WriteString(`<span class="totalPages"></span>`)
			default:
				b.WriteString(stdhtml.EscapeString(part))
			}
		}
		b.WriteString(`</div>`)
	}
	b.WriteString(`</div>`)
	return b.String()
}
