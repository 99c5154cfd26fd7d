// Package htmldoc holds what the PDF and DOCX renderers share about the
// contract HTML they receive: a parser that turns it into a tree, and a
// sanitiser that removes everything able to fetch, navigate or run code.
//
// The contracts service already sanitises template HTML on save. The worker
// sanitises again because it is the component that feeds the HTML to a
// browser: defence in depth costs a parse (well under a millisecond for a
// seven-page contract) and keeps the worker safe even if a caller forgets.
package htmldoc

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// dropped elements are removed with their whole subtree: each can load a
// resource, navigate, run code or submit data.
var dropped = map[atom.Atom]bool{
	atom.Script: true, atom.Noscript: true, atom.Iframe: true, atom.Frame: true,
	atom.Frameset: true, atom.Object: true, atom.Embed: true, atom.Applet: true,
	atom.Meta: true, atom.Link: true, atom.Base: true, atom.Form: true,
	atom.Input: true, atom.Button: true, atom.Select: true, atom.Textarea: true,
	atom.Video: true, atom.Audio: true, atom.Source: true, atom.Track: true,
	atom.Svg: true, atom.Math: true, atom.Template: true,
	atom.Head: true, atom.Title: true,
}

// urlAttrs may hold a URL; only data: URLs survive in them, so a rendered
// document never references the network or the file system.
var urlAttrs = map[string]bool{
	"src": true, "srcset": true, "href": true, "action": true, "formaction": true,
	"poster": true, "background": true, "data": true, "lowsrc": true, "ping": true,
	"xlink:href": true, "cite": true, "longdesc": true, "usemap": true,
}

// Parse parses an HTML fragment as the content of a <body>.
func Parse(fragment string) ([]*html.Node, error) {
	body := &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body}
	return html.ParseFragment(strings.NewReader(fragment), body)
}

// Sanitize returns the fragment with scripts, frames, forms, meta refreshes,
// external references, event handlers and CSS imports removed. Inline <style>
// survives (minus @import and url() to anything but data:) because templates
// use it for layout.
func Sanitize(fragment string) (string, error) {
	nodes, err := ParseClean(fragment)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, n := range nodes {
		if err := html.Render(&b, n); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// ParseClean parses the fragment and sanitises the tree as Sanitize does.
func ParseClean(fragment string) ([]*html.Node, error) {
	nodes, err := Parse(fragment)
	if err != nil {
		return nil, err
	}
	kept := nodes[:0]
	for _, n := range nodes {
		if clean(n) {
			kept = append(kept, n)
		}
	}
	return kept, nil
}

// clean sanitises n in place and reports whether n itself is kept.
func clean(n *html.Node) bool {
	switch n.Type {
	case html.CommentNode, html.DoctypeNode:
		return false
	case html.ElementNode:
		if dropped[n.DataAtom] || n.DataAtom == 0 && strings.Contains(n.Data, ":") {
			return false
		}
		kept := n.Attr[:0]
		for _, a := range n.Attr {
			key := strings.ToLower(a.Key)
			switch {
			case a.Namespace != "", strings.HasPrefix(key, "on"):
				continue
			case urlAttrs[key] && !isDataURL(a.Val):
				continue
			case key == "style":
				a.Val = cleanCSS(a.Val)
			}
			kept = append(kept, a)
		}
		n.Attr = kept
		if n.DataAtom == atom.Style {
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.TextNode {
					c.Data = cleanCSS(c.Data)
				}
			}
		}
	}
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if !clean(c) {
			n.RemoveChild(c)
		}
		c = next
	}
	return true
}

func isDataURL(v string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(v)), "data:")
}

// cleanCSS neutralises the CSS constructs that fetch: @import, url()
// pointing anywhere but data:, and image-set(), which takes a bare string
// URL. It is deliberately blunt (a CSS parser is not needed to make the
// result inert): CSS with an escape sequence is dropped whole, since
// escapes can spell any of those words (u\72 l(…)) past a text match; no
// contract styling needs them. The browser's Content-Security-Policy and
// request blocking stand behind it.
func cleanCSS(css string) string {
	lower := asciiLower(css)
	if strings.Contains(css, `\`) || strings.Contains(lower, "image-set(") {
		return ""
	}
	if !strings.Contains(lower, "@import") && !strings.Contains(lower, "url(") &&
		!strings.Contains(lower, "expression(") {
		return css
	}
	var b strings.Builder
	for i := 0; i < len(css); {
		rest := lower[i:]
		switch {
		case strings.HasPrefix(rest, "@import"):
			end := strings.IndexByte(rest, ';')
			if end < 0 {
				return b.String()
			}
			i += end + 1
		case strings.HasPrefix(rest, "url("):
			end := strings.IndexByte(rest, ')')
			if end < 0 {
				return b.String()
			}
			arg := strings.Trim(strings.TrimSpace(css[i+4:i+end]), `"'`)
			if isDataURL(arg) {
				b.WriteString(css[i : i+end+1])
			} else {
				b.WriteString("none")
			}
			i += end + 1
		case strings.HasPrefix(rest, "expression("):
			b.WriteString("none")
			i += len("expression(")
		default:
			b.WriteByte(css[i])
			i++
		}
	}
	return b.String()
}

// asciiLower lower-cases ASCII letters only, so every byte offset of the
// result is the same byte offset of s: strings.ToLower turns each byte of
// invalid UTF-8 into a three-byte U+FFFD, and offsets found in its result
// would cut s in the wrong place (a fuzz finding let url() through that way).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
