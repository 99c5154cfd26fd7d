package contracts

import (
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// allowedElements is what the template sanitiser may let through.
var allowedElements = map[string]bool{}

func init() {
	for _, e := range strings.Fields(`p br hr div span section article header footer h1 h2 h3 h4 h5 h6
		strong b em i u s strike sub sup small mark blockquote pre code abbr address cite q
		ul ol li dl dt dd table caption colgroup col thead tbody tfoot tr th td figure figcaption img a`) {
		allowedElements[e] = true
	}
}

var cssFetch = regexp.MustCompile(`(?i)url\s*\(|@import|expression\s*\(|image-set|\\`)

// FuzzSanitizer checks the template sanitiser on what the renderer will
// parse: the output, parsed again as a <body> fragment, holds only
// allow-listed elements, no event handler, images only from raster data:
// URIs, links only to mailto: and no CSS that can fetch.
func FuzzSanitizer(f *testing.F) {
	for _, s := range []string{
		`<p style="color:red;margin:0 1em">Licence <b>{{deal.title}}</b></p>`,
		`<img src="data:image/svg+xml;base64,PHN2Zz4=" onerror=alert(1)><img src="http://x/a.png">`,
		`<a href="javascript:alert(1)">x</a><a href="mailto:a@b">m</a>`,
		`<p style="background:url(http://x)">`, `<style>@import "http://x";</style>`,
		`<svg><p><style><img src=x onerror=alert(1)>`, `<noscript><p title="</noscript><img src=x onerror=alert(1)>">`,
		`<table><td><form><input name=x></form></td></table>`, `<p style="width:expression(alert(1))">`,
		`<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>`,
	} {
		f.Add(s)
	}
	s := NewSanitizer()
	f.Fuzz(func(t *testing.T, in string) {
		out := s.HTML(in)
		nodes, err := html.ParseFragment(strings.NewReader(out), &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body})
		if err != nil {
			t.Fatalf("output %q does not parse: %v", out, err)
		}
		for _, n := range nodes {
			checkAllowed(t, in, out, n)
		}
	})
}

func checkAllowed(t *testing.T, in, out string, n *html.Node) {
	t.Helper()
	if n.Type == html.ElementNode {
		if !allowedElements[n.Data] || n.Namespace != "" {
			t.Fatalf("input %q: output %q holds <%s> (namespace %q)", in, out, n.Data, n.Namespace)
		}
		for _, a := range n.Attr {
			key := strings.ToLower(a.Key)
			switch {
			case strings.HasPrefix(key, "on"):
				t.Fatalf("input %q: output %q holds handler %s", in, out, a.Key)
			case key == "src" && !rasterDataURI.MatchString(a.Val):
				t.Fatalf("input %q: output %q holds src=%q", in, out, a.Val)
			case key == "href" && !mailtoURI.MatchString(a.Val):
				t.Fatalf("input %q: output %q holds href=%q", in, out, a.Val)
			case key == "style" && cssFetch.MatchString(a.Val):
				t.Fatalf("input %q: output %q holds style=%q", in, out, a.Val)
			}
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		checkAllowed(t, in, out, c)
	}
}

// FuzzResolveTemplate resolves arbitrary template text (FuzzResolve
// fuzzes the values): it must never panic, every unknown tag Check
// reports must be recorded as unresolved by the generation, and a header
// cell's resolved text must keep {{page}}/{{pages}} for the renderer.
func FuzzResolveTemplate(f *testing.F) {
	for _, s := range []string{
		"{{deal.title}} {{ LICENSEE.COMPANY_NAME }} {{unknown.tag}}", "{{{{deal.title}}}}", "{{}}", "{{ }}",
		"{{page}} of {{pages}}", "{{" + strings.Repeat("x", 120) + "}}", "{{deal.{{licensee.phone}}title}}",
		"{{line_items}}", "}}{{", "\x00{{deal.title\x00}}",
	} {
		f.Add(s)
	}
	c := DefaultCatalogue()
	f.Fuzz(func(t *testing.T, tpl string) {
		var r Resolution
		_ = c.ResolveHTML(tpl, valuesOf("v"), &r)
		unresolved := map[string]bool{}
		for _, u := range r.Unresolved() {
			unresolved[u] = true
		}
		for _, fe := range c.Check("content", tpl, false) {
			tok := strings.TrimPrefix(fe.Message, "unknown merge tag ")
			if !unresolved[tok] {
				t.Fatalf("template %q: Check reports %s but the generation does not record it (%v)", tpl, tok, r.Unresolved())
			}
		}
		var rt Resolution
		cell := c.ResolveText(tpl+" {{page}}/{{ PAGES }}", valuesOf("v"), &rt)
		if !strings.HasSuffix(cell, "{{page}}/{{pages}}") {
			t.Fatalf("template %q: header cell %q lost the page placeholders", tpl, cell)
		}
	})
}
