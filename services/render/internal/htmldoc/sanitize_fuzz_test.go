package htmldoc

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// FuzzSanitize checks the sanitiser against what the browser will see:
// the rendered output, parsed again as a <body> fragment (so a tree that
// re-parses differently — mutation XSS — is caught), holds no dropped
// element, no event handler, no URL attribute other than data: and no CSS
// that fetches.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		`<p>Hello <b>world</b></p>`,
		`<script>alert(1)</script><img src=x onerror=alert(1)>`,
		`<a href="javascript:alert(1)">x</a><img src="data:image/png;base64,AA">`,
		`<style>@import "http://x"; p{background:url(http://x)}</style>`,
		`<svg><foreignObject><iframe src=//x></iframe></foreignObject></svg>`,
		`<noscript><p title="</noscript><img src=x onerror=alert(1)>">`,
		`<table><form><input></form></table>`, `<math><mi><style><img src=x>`,
		`<p style="background:u\72 l(http://x)">`, `<!--><img src=x>-->`,
		`<xlink:a xlink:href="http://x">`, `<template><script>x</script></template>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := Sanitize(in)
		if err != nil {
			return
		}
		nodes, err := Parse(out)
		if err != nil {
			t.Fatalf("output %q does not parse: %v", out, err)
		}
		for _, n := range nodes {
			checkInert(t, in, out, n)
		}
	})
}

func checkInert(t *testing.T, in, out string, n *html.Node) {
	t.Helper()
	if n.Type == html.ElementNode {
		if dropped[n.DataAtom] {
			t.Fatalf("input %q: output %q holds <%s>", in, out, n.Data)
		}
		for _, a := range n.Attr {
			key := strings.ToLower(a.Key)
			switch {
			case strings.HasPrefix(key, "on"):
				t.Fatalf("input %q: output %q holds handler %s", in, out, a.Key)
			case urlAttrs[key] && !isDataURL(a.Val):
				t.Fatalf("input %q: output %q holds %s=%q", in, out, a.Key, a.Val)
			case key == "style":
				checkCSS(t, in, out, a.Val)
			}
		}
		if n.DataAtom != 0 && n.Data == "style" {
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				checkCSS(t, in, out, c.Data)
			}
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		checkInert(t, in, out, c)
	}
}

// checkCSS fails on CSS that could fetch: @import, an escape, image-set or
// url() of anything but data:.
func checkCSS(t *testing.T, in, out, css string) {
	t.Helper()
	lower := strings.ToLower(css)
	if strings.Contains(lower, "@import") || strings.Contains(css, `\`) || strings.Contains(lower, "image-set(") {
		t.Fatalf("input %q: output %q holds fetching CSS %q", in, out, css)
	}
	for rest := lower; ; {
		i := strings.Index(rest, "url(")
		if i < 0 {
			break
		}
		rest = rest[i+4:]
		arg := strings.TrimLeft(rest, " \t\n\r\f\"'")
		if !strings.HasPrefix(arg, "data:") {
			t.Fatalf("input %q: output %q holds url() to %q", in, out, arg)
		}
	}
}
