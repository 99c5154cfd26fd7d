package docx

import (
	"strings"
)

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
