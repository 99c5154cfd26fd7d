package pdf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"github.com/opencrm/crm/pkg/renderq"
)

// TooLongError means the document has more pages than the renderer's
// MaxPages. Retrying cannot help: the worker gives up at once.
type TooLongError struct {
	MaxPages int
}

func (e *TooLongError) Error() string {
	return fmt.Sprintf("pdf: the document has more than %d pages", e.MaxPages)
}

// ContentTimeoutError means the print of a document did not finish within
// the renderer's JobTimeout although the browser was healthy: its content
// is too heavy to lay out. Retrying would only take the slot again.
type ContentTimeoutError struct {
	Limit time.Duration
}

func (e *ContentTimeoutError) Error() string {
	return fmt.Sprintf("pdf: the document did not print within %s", e.Limit)
}

// pdfcpuConfig is pdfcpu's configuration without its configuration file:
// pdfcpu otherwise writes a config directory under the user's home at first
// use (and exits the process when it cannot, as on a read-only root file
// system). ConfigPath is pdfcpu's own switch for that, a package variable,
// so it is set once before any configuration is made.
func pdfcpuConfig() *model.Configuration {
	disableConfigFile.Do(func() { model.ConfigPath = "disable" })
	conf := model.NewDefaultConfiguration()
	conf.ValidationMode = model.ValidationRelaxed
	return conf
}

var disableConfigFile sync.Once

// printableHeightPx is the content height of one printed page in CSS
// pixels: A4 (297 mm) less the 20 mm top and bottom margins, at 96 px/in.
const printableHeightPx = (297.0 - 40.0) / 25.4 * 96

// precheck refuses, before printing, a document whose on-screen layout is
// already far beyond the page cap: content height divided by the page's
// printable height underestimates the printed pages (the screen tab is wider
// than the printed column, and print only adds breaks), and the margin of
// twice the cap covers what does not follow that rule (lengths in vw). A
// 10,000-page template is thus refused for the price of one layout instead
// of printing MaxPages+1 pages; documents near the cap are decided by the
// exact count of the print. One CDP round trip for every document.
//
// The round trip forces the on-screen layout, ~20 ms for the seven-page
// contract on a loaded machine (docs/benchmarks.md), so it only runs for
// documents that could be that tall: see mayBeHuge.
func (r *Renderer) precheck(tctx context.Context, job renderq.Job) error {
	if !mayBeHuge(job.HTML) {
		return nil
	}
	m, err := chromedp.Call(tctx, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return fmt.Errorf("pdf: layout metrics: %w", err)
	}
	if m.CSSContentSize == nil {
		return nil
	}
	if m.CSSContentSize.Height/printableHeightPx > 2*float64(r.cfg.MaxPages) {
		return &TooLongError{MaxPages: r.cfg.MaxPages}
	}
	return nil
}

// pageCount reads the page count from the page tree of a PDF without
// validating every object: the file is Chromium's own output, and the
// count is what the page tree's root declares. It follows the references
// itself when the file has the layout Chromium writes (see
// skiaPageCount), else it reads the file with pdfcpu.
func pageCount(data []byte) (int, error) {
	if n, ok := skiaPageCount(data); ok {
		return n, nil
	}
	ctx, err := api.ReadContext(bytes.NewReader(data), pdfcpuConfig())
	if err != nil {
		return 0, fmt.Errorf("pdf: read page count: %w", err)
	}
	if err := ctx.EnsurePageCount(); err != nil {
		return 0, fmt.Errorf("pdf: read page count: %w", err)
	}
	if ctx.PageCount < 1 {
		return 0, errors.New("pdf: printed document has no pages")
	}
	return ctx.PageCount, nil
}

// skiaPageCount reads /Count of the page tree's root by following trailer
// /Root, the catalog's /Pages and the cross-reference table, as Chromium's
// PDF writer (Skia, PDF 1.4) lays a file out: one classic "xref" section
// starting at object 0 with 20-byte entries, no object streams. ok is false
// for any other layout. pdfcpu parses every object of the file first, and a
// tagged PDF has one per element of its structure tree: ~450 objects and
// ~11 ms for the seven-page contract, against ~30 objects untagged
// (docs/benchmarks.md). None of the objects read here holds content.
func skiaPageCount(data []byte) (n int, ok bool) {
	at := bytes.LastIndex(data, []byte("startxref"))
	if at < 0 {
		return 0, false
	}
	xref, ok := leadingInt(bytes.TrimLeft(data[at+len("startxref"):], " \r\n"))
	if !ok || xref >= len(data) {
		return 0, false
	}
	// "xref\n0 <size>\n" then <size> entries of 20 bytes, then the trailer.
	sec := data[xref:]
	if !bytes.HasPrefix(sec, []byte("xref")) {
		return 0, false
	}
	sec = bytes.TrimLeft(sec[len("xref"):], " \r\n")
	if !bytes.HasPrefix(sec, []byte("0 ")) {
		return 0, false
	}
	size, ok := leadingInt(sec[2:])
	if !ok {
		return 0, false
	}
	eol := bytes.IndexByte(sec, '\n')
	if eol < 0 || len(sec) < eol+1+20*size {
		return 0, false
	}
	entries := sec[eol+1 : eol+1+20*size]
	trailer := sec[eol+1+20*size:]
	object := func(ref int) ([]byte, bool) {
		if ref <= 0 || ref >= size {
			return nil, false
		}
		e := entries[20*ref : 20*ref+20]
		if e[17] != 'n' {
			return nil, false
		}
		off, ok := leadingInt(e[:10])
		if !ok || off >= len(data) {
			return nil, false
		}
		obj := data[off:]
		head := strconv.Itoa(ref) + " 0 obj"
		end := bytes.Index(obj, []byte("endobj"))
		if !bytes.HasPrefix(obj, []byte(head)) || end < 0 {
			return nil, false
		}
		return obj[len(head):end], true
	}
	root, ok := refAfter(trailer, "/Root ")
	if !ok {
		return 0, false
	}
	catalog, ok := object(root)
	if !ok {
		return 0, false
	}
	pages, ok := refAfter(catalog, "/Pages ")
	if !ok {
		return 0, false
	}
	tree, ok := object(pages)
	if !ok || !bytes.Contains(tree, []byte("/Type /Pages")) {
		return 0, false
	}
	i := bytes.Index(tree, []byte("/Count "))
	if i < 0 {
		return 0, false
	}
	return leadingInt(tree[i+len("/Count "):])
}

// refAfter reads the object number of the reference "<key><n> 0 R".
func refAfter(b []byte, key string) (int, bool) {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := b[i+len(key):]
	n, width := digits(rest)
	return n, width > 0 && bytes.HasPrefix(rest[width:], []byte(" 0 R"))
}

// leadingInt parses the decimal number at the start of b.
func leadingInt(b []byte) (int, bool) {
	n, width := digits(b)
	return n, width > 0
}

// digits parses up to ten decimal digits at the start of b (leading zeros
// allowed, as in cross-reference entries) and says how many it read.
func digits(b []byte) (n, width int) {
	for ; width < len(b) && width < 10 && b[width] >= '0' && b[width] <= '9'; width++ {
		n = n*10 + int(b[width]-'0')
	}
	return n, width
}

// hugeHTML is the size from which content alone may lay out to hundreds of
// pages (a page of plain text is ~3 KB of HTML).
const hugeHTML = 64 << 10

// cssLength finds lengths with a unit in style attributes and sheets.
var cssLength = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?(?:e\+?\d+)?)\s*(mm|cm|in|pt|pc|px|q|em|rem|ex|ch|vh|vw|vmin|vmax|%)`)

// mmPer converts the absolute units to millimetres; the relative ones are
// counted generously: an em as 10 mm (the body text's is 3.7 mm), a
// percent or viewport unit as 0.5 mm, so 100 % (a full width) is no alarm
// but 101 % is.
var mmPer = map[string]float64{
	"mm": 1, "cm": 10, "q": 0.25, "in": 25.4, "pt": 25.4 / 72, "pc": 25.4 / 6, "px": 25.4 / 96,
	"em": 10, "rem": 10, "ex": 10, "ch": 10, "vh": 0.5, "vw": 0.5, "vmin": 0.5, "vmax": 0.5, "%": 0.5,
}

// Lengths that make a document worth the layout round trip: one length
// over bigLengthMM (a box, a font or a line that tall multiplies pages), or
// lengths adding up to more than sumLengthMM (many boxes of a page each).
const (
	bigLengthMM = 50
	sumLengthMM = 1000
)

// mayBeHuge reports whether a document could lay out far beyond the page
// cap without thousands of page breaks: it is large, it has a style sheet,
// or its lengths are large. A seven-page contract is none of these and
// skips the layout round trip; a false alarm costs only that round trip.
func mayBeHuge(html string) bool {
	if len(html) > hugeHTML || strings.Contains(strings.ToLower(html), "<style") {
		return true
	}
	sum := 0.0
	for _, m := range cssLength.FindAllStringSubmatch(html, -1) {
		n, err := strconv.ParseFloat(m[1], 64)
		mm := n * mmPer[strings.ToLower(m[2])]
		sum += mm
		if err != nil || mm > bigLengthMM || sum > sumLengthMM {
			return true
		}
	}
	return false
}
