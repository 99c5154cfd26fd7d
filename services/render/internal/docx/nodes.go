package docx

import (
	"encoding/xml"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

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
