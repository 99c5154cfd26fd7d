package contracts

import (
	"regexp"

	"github.com/microcosm-cc/bluemonday"
)

// Sanitizer cleans template and contract HTML on save with an allow-list:
// document structure, text formatting, lists, tables, data: images and a
// restricted set of CSS properties. Everything able to run code, load a
// resource, navigate or submit (script, event handlers, iframe, object,
// embed, form, link, meta, base, remote URLs, url() in CSS) is dropped.
type Sanitizer struct {
	p *bluemonday.Policy
}

// NewSanitizer builds the policy once; bluemonday policies are safe for
// concurrent use after construction.
func NewSanitizer() *Sanitizer {
	p := bluemonday.NewPolicy()
	p.AllowElements(
		"p", "br", "hr", "div", "span", "section", "article", "header", "footer",
		"h1", "h2", "h3", "h4", "h5", "h6",
		"strong", "b", "em", "i", "u", "s", "strike", "sub", "sup", "small", "mark",
		"blockquote", "pre", "code", "abbr", "address", "cite", "q",
		"ul", "ol", "li", "dl", "dt", "dd",
		"table", "caption", "colgroup", "col", "thead", "tbody", "tfoot", "tr", "th", "td",
		"figure", "figcaption",
	)
	p.AllowLists()
	p.AllowTables()
	p.AllowStandardAttributes()
	p.AllowAttrs("class").Matching(bluemonday.SpaceSeparatedTokens).Globally()

	// Images: data: URIs of raster types only (RFC 2397, base64); no
	// scheme for the network is allowed anywhere and relative URLs are
	// refused, so a document never fetches anything.
	p.AllowAttrs("alt").Matching(bluemonday.Paragraph).OnElements("img")
	p.AllowAttrs("height", "width").Matching(bluemonday.NumberOrPercent).OnElements("img")
	p.AllowAttrs("src").Matching(rasterDataURI).OnElements("img")
	p.AllowDataURIImages()
	p.RequireParseableURLs(true)
	p.AllowRelativeURLs(false)
	// Links may only be mailto: (a printed contract does not navigate).
	p.AllowAttrs("href").Matching(mailtoURI).OnElements("a")
	p.AllowURLSchemes("mailto")

	// Inline styles: a fixed list of layout and typography properties,
	// each value checked by bluemonday's per-property validators (which
	// reject url(), expression() and the like). Lengths are restricted
	// further where bluemonday has no validator.
	p.AllowStyles(
		"color", "background-color", "text-align", "text-decoration", "text-transform",
		"font-weight", "font-style", "font-size", "font-family", "line-height",
		"vertical-align", "white-space", "list-style-type",
		"border-collapse", "border-style", "border-color",
	).Globally()
	length := regexp.MustCompile(`^(?:0|-?\d{1,4}(?:\.\d{1,3})?(?:px|pt|mm|cm|em|rem|%))(?:\s+(?:0|-?\d{1,4}(?:\.\d{1,3})?(?:px|pt|mm|cm|em|rem|%))){0,3}$`)
	p.AllowStyles(
		"margin", "margin-top", "margin-right", "margin-bottom", "margin-left",
		"padding", "padding-top", "padding-right", "padding-bottom", "padding-left",
		"width", "height", "min-width", "max-width", "border-width", "text-indent",
	).Matching(length).Globally()
	border := regexp.MustCompile(`^(?:\d{1,2}(?:\.\d{1,2})?(?:px|pt|mm)\s+)?(?:solid|dashed|dotted|double|none)(?:\s+(?:#[0-9a-fA-F]{3,8}|[a-zA-Z]{3,20}))?$`)
	p.AllowStyles("border", "border-top", "border-right", "border-bottom", "border-left").Matching(border).Globally()
	p.AllowStyles("page-break-before", "page-break-after", "page-break-inside", "break-before", "break-after", "break-inside").
		MatchingEnum("auto", "always", "avoid", "page", "left", "right").Globally()
	return &Sanitizer{p: p}
}

// rasterDataURI and mailtoURI narrow what bluemonday's URL schemes admit:
// AllowDataURIImages accepts any image type (SVG included, a document in
// its own right) and registers data: for every URL attribute, links too.
var (
	rasterDataURI = regexp.MustCompile(`(?i)^data:image/(?:png|jpeg|gif|webp);base64,[a-z0-9+/=\s]+$`)
	mailtoURI     = regexp.MustCompile(`(?i)^mailto:`)
)

// HTML returns the sanitised fragment.
func (s *Sanitizer) HTML(fragment string) string { return s.p.Sanitize(fragment) }
