package pdf

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/pdfcpu/pdfcpu/pkg/api"

	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/services/render/fixture"
)

func benchRenderer(b *testing.B) *Renderer {
	b.Helper()
	r, err := New(Config{ChromePath: os.Getenv("CHROME_PATH"), Tabs: 2, RestartAfter: 100_000, NoSandbox: os.Geteuid() == 0})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.Close)
	return r
}

// TestPageCountOfChromiumLayout: the page count read by following the
// references of Chromium's layout equals pdfcpu's, tagged and untagged and at
// the cap; a file of another layout (object and cross-reference streams, as
// pdfcpu writes it) or a damaged one is left to pdfcpu, which still counts
// it or fails, and nothing panics.
func TestPageCountOfChromiumLayout(t *testing.T) {
	t.Parallel()
	r, err := New(Config{ChromePath: os.Getenv("CHROME_PATH"), Tabs: 2, RestartAfter: 100, NoSandbox: os.Geteuid() == 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	untagged := fixture.Contract(renderq.PDF, fixture.Sections)
	untagged.Tagged = false
	for _, tc := range []struct {
		name  string
		job   renderq.Job
		pages int
	}{
		{"seven pages, tagged", fixture.Contract(renderq.PDF, fixture.Sections), 7},
		{"seven pages, untagged", untagged, 7},
		{"one page", renderq.Job{Format: renderq.PDF, Tagged: true, HTML: "<p>x</p>"}, 1},
		{"at the cap", renderq.Job{Format: renderq.PDF, Tagged: true, HTML: strings.Repeat(`<p style="break-after: page">x</p>`, 299) + "<p>end</p>"}, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data, err := r.Render(t.Context(), tc.job)
			if err != nil {
				t.Fatal(err)
			}
			if n, ok := skiaPageCount(data); !ok || n != tc.pages {
				t.Errorf("skiaPageCount = %d, %v; want %d, true", n, ok, tc.pages)
			}
			ctx, err := api.ReadContext(bytes.NewReader(data), pdfcpuConfig())
			if err != nil {
				t.Fatal(err)
			}
			if err := ctx.EnsurePageCount(); err != nil || ctx.PageCount != tc.pages {
				t.Errorf("pdfcpu: %d pages, %v; want %d", ctx.PageCount, err, tc.pages)
			}

			// Rewritten with object and cross-reference streams.
			conf := pdfcpuConfig()
			conf.WriteObjectStream, conf.WriteXRefStream = true, true
			ctx.Conf = conf
			var streams bytes.Buffer
			if err := api.WriteContext(ctx, &streams); err != nil {
				t.Fatal(err)
			}
			if _, ok := skiaPageCount(streams.Bytes()); ok {
				t.Error("skiaPageCount read a file with cross-reference streams")
			}
			if n, err := pageCount(streams.Bytes()); err != nil || n != tc.pages {
				t.Errorf("pageCount with streams = %d, %v; want %d", n, err, tc.pages)
			}

			// Damaged files: cut anywhere, the cross-reference offset moved.
			for cut := len(data) - 1; cut > 0; cut -= len(data)/97 + 1 {
				if n, ok := skiaPageCount(data[:cut]); ok && n != tc.pages {
					t.Fatalf("cut at %d: %d pages", cut, n)
				}
			}
			at := bytes.LastIndex(data, []byte("startxref"))
			for _, off := range []string{"0", "15", "999999999", "-1", ""} {
				moved := append(bytes.Clone(data[:at]), []byte("startxref\n"+off+"\n%%EOF\n")...)
				if _, ok := skiaPageCount(moved); ok {
					t.Errorf("startxref %q: read a page count", off)
				}
			}
		})
	}
}

// BenchmarkPageCount measures reading the page count of a printed PDF, the
// check of the page cap that every print pays: the seven-page contract and
// a document at the cap (300 pages).
func BenchmarkPageCount(b *testing.B) {
	r := benchRenderer(b)
	for _, tc := range []struct {
		name string
		job  renderq.Job
	}{
		{"pages=7", fixture.Contract(renderq.PDF, fixture.Sections)},
		{"pages=300", renderq.Job{Format: renderq.PDF, HTML: strings.Repeat(`<p style="break-after: page">x</p>`, 299) + "<p>end</p>"}},
	} {
		data, err := r.Render(context.Background(), tc.job)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := pageCount(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLayoutPrecheck measures the layout shortcut every print pays
// (Page.getLayoutMetrics on a freshly set document, which forces its
// on-screen layout) on the seven-page contract, as a p50 in milliseconds.
func BenchmarkLayoutPrecheck(b *testing.B) {
	r := benchRenderer(b)
	br, err := r.acquire(context.Background(), false)
	if err != nil {
		b.Fatal(err)
	}
	defer br.active.Done()
	doc, err := Document(fixture.Contract(renderq.PDF, fixture.Sections))
	if err != nil {
		b.Fatal(err)
	}
	var took []time.Duration
	for b.Loop() {
		tctx, cancel := chromedp.NewContext(br.ctx, chromedp.WithNewWindow(false))
		if err := chromedp.Do(tctx); err != nil {
			b.Fatal(err)
		}
		frameID := cdp.FrameID(chromedp.FromContext(tctx).Target.TargetID)
		if _, err := chromedp.Call(tctx, page.SetDocumentContent, page.SetDocumentContentParams{FrameID: frameID, HTML: doc}); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := chromedp.Call(tctx, page.GetLayoutMetrics, cdp.Empty{}); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		cancel()
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
}

func TestMayBeHuge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		html string
		want bool
	}{
		{"the seven-page contract", fixture.Contract(renderq.PDF, fixture.Sections).HTML, false},
		{"ordinary lengths", `<p style="margin: 0 0 1em; padding: 4pt; width: 100%">x</p><img width="50%">`, false},
		{"a box taller than a page", `<div style="height: 2570000mm">x</div>`, true},
		{"one box of a page", `<div style="height: 297mm">x</div>`, true},
		{"in pixels", `<div style="min-height:99999px">x</div>`, true},
		{"in ems", `<p style="line-height: 500em">x</p>`, true},
		{"exponent", `<div style="height: 1e9mm">x</div>`, true},
		{"a style sheet", `<STYLE>p { break-after: page }</STYLE><p>x</p>`, true},
		{"large", strings.Repeat("<p>text</p>", 10_000), true},
		{"a large font", `<p style="font-size: 60mm">x</p>`, true},
		{"many boxes of a page each", strings.Repeat(`<div style="height: 297mm">x</div>`, 4), true},
		{"over a full width", `<div style="height: 101%">x</div>`, true},
	}
	for _, tc := range tests {
		if got := mayBeHuge(tc.html); got != tc.want {
			t.Errorf("%s: mayBeHuge = %v, want %v", tc.name, got, tc.want)
		}
	}
}
