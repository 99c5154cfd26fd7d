package contracts

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/net/html"
)

// Length bounds of template and contract HTML. A printed contract is A4
// with 20 mm margins, so no single box needs to be taller or wider than a
// page: a larger value only multiplies pages (3.5 KB of `height: 9999mm`
// boxes lays out to thousands of pages). The render worker's page cap is
// the net under these; they refuse the absurd value when it is saved, with
// the field named, instead of when someone downloads the PDF.
const (
	// maxLengthMM bounds an absolute length (px, pt, mm, cm, in, pc, Q):
	// the height of an A4 page.
	maxLengthMM = 297.0
	// maxRelative bounds font-relative lengths (em, rem, ex, ch):
	// 20em of the 10.5pt body text is 74 mm.
	maxRelative = 20.0
	// maxPercent bounds percentages and viewport units.
	maxPercent = 400.0
	// maxLineHeight bounds a unitless line-height (a multiple of the font
	// size).
	maxLineHeight = 10.0
	// maxAttrPixels bounds the width and height attributes of images and
	// table cells (CSS pixels; 1123 px is 297 mm).
	maxAttrPixels = 1123.0
)

// mmPer converts absolute CSS units to millimetres.
var mmPer = map[string]float64{
	"mm": 1, "cm": 10, "q": 0.25, "in": 25.4, "pt": 25.4 / 72, "pc": 25.4 / 6, "px": 25.4 / 96,
}

var (
	// cssNumber finds numbers with an optional unit in a declaration value.
	cssNumber = regexp.MustCompile(`(?i)([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)(mm|cm|q|in|pt|pc|px|em|rem|ex|ch|%|vh|vw|vmin|vmax)?`)
	// cssColour removes colours, whose digits are not lengths.
	cssColour = regexp.MustCompile(`(?i)#[0-9a-f]{3,8}\b|(?:rgba?|hsla?)\([^)]*\)`)
)

// CheckLengths returns why fragment holds an absurd length, or "" when it
// holds none: the first inline style or width/height attribute over the
// bounds above, quoted as written.
func CheckLengths(fragment string) string {
	z := html.NewTokenizer(strings.NewReader(fragment))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			for _, a := range tok.Attr {
				if msg := checkAttr(strings.ToLower(a.Key), a.Val); msg != "" {
					return msg
				}
			}
		}
	}
}

func checkAttr(key, val string) string {
	switch key {
	case "style":
		for decl := range strings.SplitSeq(val, ";") {
			prop, value, ok := strings.Cut(decl, ":")
			if !ok {
				continue
			}
			prop = strings.ToLower(strings.TrimSpace(prop))
			if msg := checkDeclaration(prop, value); msg != "" {
				return fmt.Sprintf("style %q %s", strings.TrimSpace(decl), msg)
			}
		}
	case "width", "height":
		v := strings.TrimSpace(val)
		limit, unit := maxAttrPixels, ""
		if strings.HasSuffix(v, "%") {
			limit, unit, v = maxPercent, "%", strings.TrimSuffix(v, "%")
		}
		if n, err := strconv.ParseFloat(v, 64); err == nil && (n > limit || n < -limit) {
			return fmt.Sprintf("attribute %s=%q is too large: at most %g%s", key, val, limit, unit)
		}
	}
	return ""
}

// checkDeclaration checks every number of one CSS declaration.
func checkDeclaration(prop, value string) string {
	value = cssColour.ReplaceAllString(value, " ")
	for _, m := range cssNumber.FindAllStringSubmatch(value, -1) {
		n, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return "has a number that cannot be read"
		}
		if n < 0 {
			n = -n
		}
		unit := strings.ToLower(m[2])
		switch {
		case unit == "" && prop == "line-height":
			if n > maxLineHeight {
				return fmt.Sprintf("is too large: a line height is at most %g times the font size", maxLineHeight)
			}
		case unit == "":
			// A unitless number (font-weight: 700, a zero length) is no
			// length.
		case mmPer[unit] > 0:
			if n*mmPer[unit] > maxLengthMM {
				return fmt.Sprintf("is too large: lengths are at most %gmm (the height of an A4 page)", maxLengthMM)
			}
		case unit == "%" || strings.HasPrefix(unit, "v"):
			if n > maxPercent {
				return fmt.Sprintf("is too large: percentages are at most %g%%", maxPercent)
			}
		default: // em, rem, ex, ch
			if n > maxRelative {
				return fmt.Sprintf("is too large: relative lengths are at most %g%s", maxRelative, unit)
			}
		}
	}
	return ""
}
