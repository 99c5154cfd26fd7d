package docx

import (
	"strconv"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

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
