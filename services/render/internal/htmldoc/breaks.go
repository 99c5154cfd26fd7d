package htmldoc

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// blocks are the elements whose forced page breaks ForcedBreaks counts:
// block-level boxes in normal flow, where a forced break always applies.
var blocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true,
	atom.H5: true, atom.H6: true, atom.Hr: true, atom.Section: true, atom.Article: true,
	atom.Header: true, atom.Footer: true, atom.Blockquote: true, atom.Pre: true, atom.Ul: true,
	atom.Ol: true, atom.Li: true, atom.Dl: true, atom.Dt: true, atom.Dd: true, atom.Figure: true,
	atom.Address: true, atom.Main: true, atom.Nav: true, atom.Aside: true,
}

// ForcedBreaks counts forced page breaks of a parsed fragment that are each
// certain to end a page: a break-before or break-after of page, always,
// left or right (inline style, or the "page-break" class of the print
// style) on a block in normal flow, counted only when content was seen since
// the previous counted break (adjacent breaks collapse into one). So the
// printed document has at least as many pages as the count, which lets the
// renderer refuse a document of thousands of page breaks without laying it
// out. Whatever could take a box out of normal flow or hide it (a display,
// float, position, visibility or column declaration, a table) stops the
// counting below it, and its text does not count as content: the count errs
// low, never high. Breaks set by a <style> sheet are not seen; the printed
// page count remains the real check.
func ForcedBreaks(nodes []*html.Node) int {
	c := breakCounter{}
	for _, n := range nodes {
		c.walk(n, true)
	}
	return c.count
}

type breakCounter struct {
	count   int
	content bool
}

func (c *breakCounter) walk(n *html.Node, countable bool) {
	switch n.Type {
	case html.TextNode:
		if countable && strings.TrimSpace(n.Data) != "" {
			c.content = true
		}
		return
	case html.ElementNode:
	default:
		return
	}
	style := strings.ToLower(attr(n, "style"))
	if countable && (n.DataAtom == atom.Table || outOfFlow(style)) {
		countable = false
	}
	if countable && n.DataAtom == atom.Img {
		c.content = true
	}
	block := countable && blocks[n.DataAtom]
	if !block && !inline[n.DataAtom] {
		countable = false // an unknown or replaced element: do not guess
	}
	before, after := false, false
	if block {
		before, after = breaks(style, attr(n, "class"))
	}
	if before && c.content {
		c.count++
		c.content = false
	}
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		c.walk(ch, countable)
	}
	if after && c.content {
		c.count++
		c.content = false
	}
}

// inline elements keep counting below them (their text is content).
var inline = map[atom.Atom]bool{
	atom.Span: true, atom.Strong: true, atom.B: true, atom.Em: true, atom.I: true, atom.U: true,
	atom.S: true, atom.Strike: true, atom.Sub: true, atom.Sup: true, atom.Small: true,
	atom.Mark: true, atom.Code: true, atom.Abbr: true, atom.Cite: true, atom.Q: true, atom.A: true,
	atom.Br: true, atom.Img: true,
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if strings.EqualFold(a.Key, key) {
			return a.Val
		}
	}
	return ""
}

// outOfFlow reports a style that may take the box out of normal flow, hide
// it, or fragment it in columns.
func outOfFlow(style string) bool {
	for _, p := range []string{"display", "float", "position", "visibility", "column", "content-visibility"} {
		if strings.Contains(style, p) {
			return true
		}
	}
	return false
}

// breaks reports forced breaks before and after a box from its inline
// style and class.
func breaks(style, class string) (before, after bool) {
	for decl := range strings.SplitSeq(style, ";") {
		prop, val, ok := strings.Cut(decl, ":")
		if !ok {
			continue
		}
		prop, val = strings.TrimSpace(prop), strings.TrimSpace(val)
		forced := val == "page" || val == "always" || val == "left" || val == "right"
		switch prop {
		case "break-before", "page-break-before":
			before = before || forced
		case "break-after", "page-break-after":
			after = after || forced
		}
	}
	for _, cl := range strings.Fields(class) {
		if cl == "page-break" {
			after = true
		}
	}
	return before, after
}
