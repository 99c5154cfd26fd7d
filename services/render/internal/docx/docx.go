// Package docx writes a job as a Word document (WordprocessingML) natively in
// Go: no LibreOffice, no browser. It maps the subset of HTML that contract
// templates use (headings, paragraphs, bold/italic/underline/strike, ordered
// and unordered lists, tables, line and page breaks) and gives every page a
// header and a footer of three tab-stopped parts with PAGE and NUMPAGES
// fields.
//
// The archive is deterministic (fixed timestamps, fixed part order), so the
// same job always gives the same bytes.
package docx

import (
	"archive/zip"
	"bytes"
	"fmt"
	"time"

	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/services/render/internal/htmldoc"
)

// Page geometry in twentieths of a point: A4, 20 mm margins, header and
// footer 10 mm from the edge.
const (
	pageW     = 11906
	pageH     = 16838
	margin    = 1134
	bandDist  = 567
	textWidth = pageW - 2*margin
)

// Render converts the job to a .docx file.
func Render(job renderq.Job) ([]byte, error) {
	nodes, err := htmldoc.ParseClean(job.HTML)
	if err != nil {
		return nil, fmt.Errorf("docx: parse: %w", err)
	}
	c := &converter{}
	for _, n := range nodes {
		c.walk(n, runProps{})
	}
	c.closePara()

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	parts := []struct{ name, body string }{
		{"[Content_Types].xml", contentTypes},
		{"_rels/.rels", rootRels},
		{"docProps/core.xml", coreProps(job.Title, job.Language())},
		{"docProps/app.xml", appProps},
		{"word/_rels/document.xml.rels", documentRels},
		{"word/document.xml", c.document()},
		{"word/styles.xml", styles(job.Language())},
		{"word/settings.xml", settings},
		{"word/numbering.xml", c.numbering()},
		{"word/header1.xml", band("hdr", "Header", job.Header)},
		{"word/footer1.xml", band("ftr", "Footer", job.Footer)},
	}
	for _, p := range parts {
		w, err := zw.CreateHeader(&zip.FileHeader{
			Name:     p.name,
			Method:   zip.Deflate,
			Modified: time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC),
		})
		if err != nil {
			return nil, err
		}
		if _, err := w.Write([]byte(p.body)); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
