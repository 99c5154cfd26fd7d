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
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

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
		{"docProps/core.xml", coreProps(job.Title)},
		{"docProps/app.xml", appProps},
		{"word/_rels/document.xml.rels", documentRels},
		{"word/document.xml", c.document()},
		{"word/styles.xml", styles},
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

// runProps is the inline formatting in effect.
type runProps struct {
	bold, italic, underline, strike bool
	vertAlign                       string // "superscript" or "subscript"
	ws                              whiteSpace
}

// whiteSpace is the CSS white-space handling in effect, inherited like the
// formatting.
type whiteSpace int

const (
	wsNormal  whiteSpace = iota // collapse spaces, tabs and newlines
	wsPre                       // pre, pre-wrap, break-spaces: keep all
	wsPreLine                   // pre-line: collapse spaces, keep newlines
)

func (p runProps) xml() string {
	var b strings.Builder
	if p.bold {
		b.WriteString(`<w:b/>`)
	}
	if p.italic {
		b.WriteString(`<w:i/>`)
	}
	if p.strike {
		b.WriteString(`<w:strike/>`)
	}
	if p.underline {
		b.WriteString(`<w:u w:val="single"/>`)
	}
	if p.vertAlign != "" {
		b.WriteString(`<w:vertAlign w:val="` + p.vertAlign + `"/>`)
	}
	if b.Len() == 0 {
		return ""
	}
	return "<w:rPr>" + b.String() + "</w:rPr>"
}

// list is an open <ul> or <ol>.
type list struct {
	numID int
}

// converter walks the HTML tree and writes the body of document.xml.
type converter struct {
	body    strings.Builder
	open    bool   // a <w:p> is open
	pPr     string // properties of the next paragraph
	pending bool   // a paragraph was requested but has no run yet
	lists   []list
	ordered int // <ol> count; each restarts numbering with its own w:num
	// brs counts preserved newlines not yet written: they are written
	// before the next content, and the last one at the end of a paragraph
	// is dropped, as a browser drops a <pre>'s trailing newline.
	brs int
}

// para requests a new paragraph with the given properties; it is written
// lazily with its first run, so empty blocks leave no empty paragraphs.
func (c *converter) para(pPr string) {
	if c.pending && !c.open && pPr == "" {
		// A plain block opening inside a block that wrote nothing yet, as
		// in <li><p>text</p></li>: keep the outer properties (the bullet).
		return
	}
	c.closePara()
	c.pPr = pPr
	c.pending = true
}

func (c *converter) closePara() {
	if c.brs > 1 {
		c.ensurePara()
		c.body.WriteString(`<w:r>` + strings.Repeat(`<w:br/>`, c.brs-1) + `</w:r>`)
	}
	c.brs = 0
	if c.open {
		c.body.WriteString(`</w:p>`)
	}
	c.open, c.pending, c.pPr = false, false, ""
}

// ensurePara opens the requested (or a plain) paragraph.
func (c *converter) ensurePara() {
	if c.open {
		return
	}
	c.body.WriteString(`<w:p>`)
	if c.pPr != "" {
		c.body.WriteString(`<w:pPr>` + c.pPr + `</w:pPr>`)
	}
	c.open, c.pending = true, false
}

func (c *converter) text(s string, p runProps) {
	if p.ws != wsNormal {
		c.preText(s, p)
		return
	}
	s = collapse(s)
	if s == "" {
		return
	}
	if !c.open || c.brs > 0 { // at the start of a line
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return
		}
	}
	c.ensurePara()
	c.flushBreaks()
	c.body.WriteString(`<w:r>` + p.xml() + `<w:t xml:space="preserve">` + escape(s) + `</w:t></w:r>`)
}

// preText writes text whose white space is preserved: each newline becomes
// a <w:br/>, each tab a <w:tab/>, and spaces are kept (all in one run). For
// pre-line, spaces and tabs collapse and spaces around a newline go.
func (c *converter) preText(s string, p runProps) {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	lines := strings.Split(s, "\n")
	var run strings.Builder
	for i, line := range lines {
		if i > 0 {
			c.brs++
		}
		if p.ws == wsPreLine {
			line = collapse(line)
			if !c.open || c.brs > 0 { // at the start of a line
				line = strings.TrimLeft(line, " ")
			}
			if i < len(lines)-1 {
				line = strings.TrimRight(line, " ")
			}
		}
		if line == "" {
			continue
		}
		run.WriteString(strings.Repeat(`<w:br/>`, c.brs))
		c.brs = 0
		for j, part := range strings.Split(line, "\t") {
			if j > 0 {
				run.WriteString(`<w:tab/>`)
			}
			if part != "" {
				run.WriteString(`<w:t xml:space="preserve">` + escape(part) + `</w:t>`)
			}
		}
	}
	if run.Len() == 0 {
		return
	}
	c.ensurePara()
	c.body.WriteString(`<w:r>` + p.xml() + run.String() + `</w:r>`)
}

// flushBreaks writes the preserved newlines still pending.
func (c *converter) flushBreaks() {
	if c.brs > 0 {
		c.body.WriteString(`<w:r>` + strings.Repeat(`<w:br/>`, c.brs) + `</w:r>`)
		c.brs = 0
	}
}

func (c *converter) breakRun(kind string) {
	c.ensurePara()
	c.flushBreaks()
	if kind == "" {
		c.body.WriteString(`<w:r><w:br/></w:r>`)
		return
	}
	c.body.WriteString(`<w:r><w:br w:type="` + kind + `"/></w:r>`)
}

// collapse applies HTML whitespace collapsing.
func collapse(s string) string {
	if !strings.ContainsAny(s, " \t\n\r\f") {
		return s
	}
	var b strings.Builder
	space := false
	for _, r := range s {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	if space {
		b.WriteByte(' ')
	}
	return b.String()
}

func (c *converter) walk(n *html.Node, p runProps) {
	switch n.Type {
	case html.TextNode:
		c.text(n.Data, p)
		return
	case html.ElementNode:
	default:
		return
	}
	if breakBefore(n) {
		c.closePara()
		c.pageBreak()
	}
	if n.DataAtom == atom.Pre {
		p.ws = wsPre
	}
	p.ws = whiteSpaceOf(n, p.ws)
	switch n.DataAtom {
	case atom.Style, atom.Img:
		return // styles are the PDF's business; images are not embedded (see decisions)
	case atom.Br:
		c.breakRun("")
		return
	case atom.Hr:
		c.closePara()
		if hasClass(n, "page-break") {
			c.pageBreak()
		} else {
			c.body.WriteString(`<w:p><w:pPr><w:pBdr><w:bottom w:val="single" w:sz="6" w:space="1" w:color="888888"/></w:pBdr></w:pPr></w:p>`)
		}
		return
	case atom.B, atom.Strong:
		p.bold = true
	case atom.I, atom.Em, atom.Cite, atom.Var:
		p.italic = true
	case atom.U, atom.Ins:
		p.underline = true
	case atom.S, atom.Strike, atom.Del:
		p.strike = true
	case atom.Sup:
		p.vertAlign = "superscript"
	case atom.Sub:
		p.vertAlign = "subscript"
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		c.block(n, `<w:pStyle w:val="Heading`+n.Data[1:]+`"/>`+align(n), p)
		return
	case atom.P, atom.Div, atom.Section, atom.Article, atom.Header, atom.Footer, atom.Address, atom.Figure, atom.Figcaption, atom.Dt, atom.Dd:
		c.block(n, align(n), p)
		return
	case atom.Blockquote:
		c.block(n, `<w:ind w:left="567"/>`, p)
		return
	case atom.Pre:
		c.block(n, `<w:pStyle w:val="Code"/>`, p)
		return
	case atom.Ul, atom.Ol:
		c.closePara()
		l := list{numID: 1}
		if n.DataAtom == atom.Ol {
			c.ordered++
			l.numID = 1 + c.ordered
		}
		c.lists = append(c.lists, l)
		c.children(n, p)
		c.lists = c.lists[:len(c.lists)-1]
		c.closePara()
		return
	case atom.Li:
		l := list{numID: 1}
		if len(c.lists) > 0 {
			l = c.lists[len(c.lists)-1]
		}
		lvl := max(0, min(len(c.lists)-1, 8))
		c.block(n, `<w:pStyle w:val="ListParagraph"/><w:numPr><w:ilvl w:val="`+strconv.Itoa(lvl)+`"/><w:numId w:val="`+strconv.Itoa(l.numID)+`"/></w:numPr>`, p)
		return
	case atom.Table:
		c.closePara()
		c.table(n, p)
		return
	}
	c.children(n, p)
	if breakAfter(n) {
		c.closePara()
		c.pageBreak()
	}
}

func (c *converter) children(n *html.Node, p runProps) {
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		c.walk(ch, p)
	}
}

// block writes n as its own paragraph(s).
func (c *converter) block(n *html.Node, pPr string, p runProps) {
	c.para(pPr)
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		c.walk(ch, p)
		if !c.open && !c.pending {
			// A nested block closed the paragraph; continue in a new one
			// with the same properties (text after a nested list).
			c.para(pPr)
		}
	}
	c.closePara()
	if breakAfter(n) {
		c.pageBreak()
	}
}

func (c *converter) pageBreak() {
	c.body.WriteString(`<w:p><w:r><w:br w:type="page"/></w:r></w:p>`)
}

// table writes a <table> as a bordered w:tbl spanning the text width.
func (c *converter) table(n *html.Node, p runProps) {
	var rows []*html.Node
	var collect func(*html.Node)
	collect = func(n *html.Node) {
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			switch ch.DataAtom {
			case atom.Tr:
				rows = append(rows, ch)
			case atom.Thead, atom.Tbody, atom.Tfoot:
				collect(ch)
			}
		}
	}
	collect(n)
	cols := 0
	for _, r := range rows {
		w := 0
		for cell := range cells(r) {
			w += span(cell)
		}
		cols = max(cols, w)
	}
	if cols == 0 {
		return
	}
	colW := textWidth / cols
	c.body.WriteString(`<w:tbl><w:tblPr><w:tblStyle w:val="TableGrid"/><w:tblW w:w="` + strconv.Itoa(textWidth) + `" w:type="dxa"/>` +
		`<w:tblBorders><w:top w:val="single" w:sz="4" w:space="0" w:color="888888"/><w:left w:val="single" w:sz="4" w:space="0" w:color="888888"/>` +
		`<w:bottom w:val="single" w:sz="4" w:space="0" w:color="888888"/><w:right w:val="single" w:sz="4" w:space="0" w:color="888888"/>` +
		`<w:insideH w:val="single" w:sz="4" w:space="0" w:color="888888"/><w:insideV w:val="single" w:sz="4" w:space="0" w:color="888888"/></w:tblBorders>` +
		`<w:tblLayout w:type="fixed"/><w:tblCellMar><w:left w:w="85" w:type="dxa"/><w:right w:w="85" w:type="dxa"/></w:tblCellMar></w:tblPr><w:tblGrid>`)
	for range cols {
		c.body.WriteString(`<w:gridCol w:w="` + strconv.Itoa(colW) + `"/>`)
	}
	c.body.WriteString(`</w:tblGrid>`)
	for _, r := range rows {
		c.body.WriteString(`<w:tr>`)
		if r.Parent != nil && r.Parent.DataAtom == atom.Thead {
			c.body.WriteString(`<w:trPr><w:tblHeader/></w:trPr>`)
		}
		used := 0
		for cell := range cells(r) {
			s := min(span(cell), cols-used)
			if s <= 0 {
				break
			}
			used += s
			c.body.WriteString(`<w:tc><w:tcPr><w:tcW w:w="` + strconv.Itoa(colW*s) + `" w:type="dxa"/>`)
			if s > 1 {
				c.body.WriteString(`<w:gridSpan w:val="` + strconv.Itoa(s) + `"/>`)
			}
			c.body.WriteString(`</w:tcPr>`)
			cp := p
			if cell.DataAtom == atom.Th {
				cp.bold = true
			}
			mark := c.body.Len()
			c.block(cell, "", cp)
			if c.body.Len() == mark {
				c.body.WriteString(`<w:p/>`) // a cell needs a paragraph
			}
			c.body.WriteString(`</w:tc>`)
		}
		for ; used < cols; used++ {
			c.body.WriteString(`<w:tc><w:tcPr><w:tcW w:w="` + strconv.Itoa(colW) + `" w:type="dxa"/></w:tcPr><w:p/></w:tc>`)
		}
		c.body.WriteString(`</w:tr>`)
	}
	c.body.WriteString(`</w:tbl>`)
	// Word needs a paragraph between adjacent tables and after a table at
	// the end of a cell or document; an empty one is harmless.
	c.body.WriteString(`<w:p/>`)
}

func cells(tr *html.Node) func(func(*html.Node) bool) {
	return func(yield func(*html.Node) bool) {
		for ch := tr.FirstChild; ch != nil; ch = ch.NextSibling {
			if ch.DataAtom == atom.Td || ch.DataAtom == atom.Th {
				if !yield(ch) {
					return
				}
			}
		}
	}
}

func span(cell *html.Node) int {
	for _, a := range cell.Attr {
		if a.Key == "colspan" {
			if n, err := strconv.Atoi(a.Val); err == nil && n > 0 {
				return min(n, 63)
			}
		}
	}
	return 1
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	return strings.Contains(" "+attr(n, "class")+" ", " "+class+" ")
}

func style(n *html.Node) string {
	return strings.ReplaceAll(strings.ToLower(attr(n, "style")), " ", "")
}

// whiteSpaceOf returns the white-space mode n's inline style sets (the last
// white-space declaration wins), or inherited when it sets none it knows.
func whiteSpaceOf(n *html.Node, inherited whiteSpace) whiteSpace {
	ws := inherited
	for _, decl := range strings.Split(style(n), ";") {
		v, ok := strings.CutPrefix(decl, "white-space:")
		if !ok {
			continue
		}
		switch strings.TrimSuffix(v, "!important") {
		case "normal", "nowrap":
			ws = wsNormal
		case "pre", "pre-wrap", "break-spaces":
			ws = wsPre
		case "pre-line":
			ws = wsPreLine
		}
	}
	return ws
}

func breakBefore(n *html.Node) bool {
	s := style(n)
	return strings.Contains(s, "page-break-before:always") || strings.Contains(s, "break-before:page")
}

func breakAfter(n *html.Node) bool {
	s := style(n)
	return n.DataAtom != atom.Hr && hasClass(n, "page-break") ||
		strings.Contains(s, "page-break-after:always") || strings.Contains(s, "break-after:page")
}

func align(n *html.Node) string {
	s := style(n)
	switch {
	case strings.Contains(s, "text-align:center"):
		return `<w:jc w:val="center"/>`
	case strings.Contains(s, "text-align:right"):
		return `<w:jc w:val="right"/>`
	case strings.Contains(s, "text-align:justify"):
		return `<w:jc w:val="both"/>`
	}
	return ""
}

func escape(s string) string {
	var b strings.Builder
	if err := xml.EscapeText(&b, []byte(s)); err != nil {
		return ""
	}
	return b.String()
}

func (c *converter) document() string {
	return xml.Header + `<w:document xmlns:w="` + nsW + `" xmlns:r="` + nsR + `"><w:body>` + c.body.String() +
		`<w:sectPr><w:headerReference w:type="default" r:id="rIdHeader1"/><w:footerReference w:type="default" r:id="rIdFooter1"/>` +
		`<w:pgSz w:w="` + strconv.Itoa(pageW) + `" w:h="` + strconv.Itoa(pageH) + `"/>` +
		`<w:pgMar w:top="` + strconv.Itoa(margin) + `" w:right="` + strconv.Itoa(margin) + `" w:bottom="` + strconv.Itoa(margin) +
		`" w:left="` + strconv.Itoa(margin) + `" w:header="` + strconv.Itoa(bandDist) + `" w:footer="` + strconv.Itoa(bandDist) + `" w:gutter="0"/>` +
		`</w:sectPr></w:body></w:document>`
}

// numbering defines one bullet list (numId 1) and one restartable decimal
// list per <ol> (numId 2...).
func (c *converter) numbering() string {
	var b strings.Builder
	b.WriteString(xml.Header + `<w:numbering xmlns:w="` + nsW + `">`)
	for id, kind := range []string{"bullet", "decimal"} {
		b.WriteString(`<w:abstractNum w:abstractNumId="` + strconv.Itoa(id) + `"><w:multiLevelType w:val="hybridMultilevel"/>`)
		for lvl := range 9 {
			text, font := "•", `<w:rPr><w:rFonts w:ascii="Arial" w:hAnsi="Arial"/></w:rPr>`
			if kind == "decimal" {
				text, font = "%"+strconv.Itoa(lvl+1)+".", ""
			} else if lvl%2 == 1 {
				text = "◦"
			}
			ind := 720 + 360*lvl
			fmt.Fprintf(&b, `<w:lvl w:ilvl="%d"><w:start w:val="1"/><w:numFmt w:val="%s"/><w:lvlText w:val="%s"/><w:lvlJc w:val="left"/><w:pPr><w:ind w:left="%d" w:hanging="360"/></w:pPr>%s</w:lvl>`,
				lvl, kind, text, ind, font)
		}
		b.WriteString(`</w:abstractNum>`)
	}
	b.WriteString(`<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>`)
	for i := range c.ordered {
		fmt.Fprintf(&b, `<w:num w:numId="%d"><w:abstractNumId w:val="1"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride></w:num>`, i+2)
	}
	b.WriteString(`</w:numbering>`)
	return b.String()
}

// band writes a header or footer part: one paragraph with a center and a
// right tab stop holding the three cells, {{page}} and {{pages}} as PAGE and
// NUMPAGES fields.
func band(root, styleID string, cells [3]string) string {
	var b strings.Builder
	b.WriteString(xml.Header + `<w:` + root + ` xmlns:w="` + nsW + `" xmlns:r="` + nsR + `"><w:p><w:pPr><w:pStyle w:val="` + styleID + `"/>` +
		`<w:tabs><w:tab w:val="center" w:pos="` + strconv.Itoa(textWidth/2) + `"/><w:tab w:val="right" w:pos="` + strconv.Itoa(textWidth) + `"/></w:tabs></w:pPr>`)
	for i, cell := range cells {
		if i > 0 {
			b.WriteString(`<w:r><w:tab/></w:r>`)
		}
		for _, part := range renderq.SplitPlaceholders(cell) {
			switch part {
			case renderq.PagePlaceholder:
				b.WriteString(field("PAGE"))
			case renderq.PagesPlaceholder:
				b.WriteString(field("NUMPAGES"))
			default:
				b.WriteString(`<w:r><w:t xml:space="preserve">` + escape(part) + `</w:t></w:r>`)
			}
		}
	}
	b.WriteString(`</w:p></w:` + root + `>`)
	return b.String()
}

// field is a complex field with a cached result of 1, which Word and
// LibreOffice update when they lay out the pages.
func field(instr string) string {
	return `<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> ` + instr +
		` </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>1</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r>`
}

func coreProps(title string) string {
	return xml.Header + `<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" ` +
		`xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" ` +
		`xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><dc:title>` + escape(title) + `</dc:title>` +
		`<dc:creator>OpenCRM</dc:creator></cp:coreProperties>`
}
