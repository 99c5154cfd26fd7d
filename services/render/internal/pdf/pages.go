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
// count is what the page tree's root declares.
func pageCount(data []byte) (int, error) {
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
