package pdf_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/services/render/fixture"
	"github.com/opencrm/crm/services/render/internal/pdf"
)

func newRenderer(t testing.TB, restartAfter int, restarts *atomic.Int32) *pdf.Renderer {
	t.Helper()
	r, err := pdf.New(pdf.Config{
		ChromePath:   os.Getenv("CHROME_PATH"),
		Tabs:         4,
		RestartAfter: restartAfter,
		NoSandbox:    os.Geteuid() == 0,
		OnRestart: func(string) {
			if restarts != nil {
				restarts.Add(1)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// pdfText extracts the text with poppler's pdftotext, keeping the layout so
// header cells stay on their line.
func pdfText(t *testing.T, data []byte) string {
	t.Helper()
	cmd := exec.Command("pdftotext", "-layout", "-", "-")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pdftotext: %v", err)
	}
	return string(out)
}

func pdfPages(t *testing.T, data []byte) int {
	t.Helper()
	cmd := exec.Command("pdfinfo", "-")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pdfinfo: %v", err)
	}
	var pages int
	for line := range strings.Lines(string(out)) {
		if _, err := fmt.Sscanf(line, "Pages: %d", &pages); err == nil {
			return pages
		}
	}
	t.Fatalf("pdfinfo gave no page count:\n%s", out)
	return 0
}

func TestRenderContract(t *testing.T) {
	t.Parallel()
	r := newRenderer(t, 100, nil)
	job := fixture.Contract(renderq.PDF, fixture.Sections)
	data, err := r.Render(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		t.Fatalf("not a PDF: %q", data[:min(len(data), 16)])
	}
	pages := pdfPages(t, data)
	if pages < 2 {
		t.Fatalf("pages = %d, want several", pages)
	}
	text := pdfText(t, data)
	for _, want := range []string{
		fixture.Number, fixture.Company, fixture.Header, "Confidential",
		"Page 1 of " + fmt.Sprint(pages), fmt.Sprintf("Page %d of %d", pages, pages),
		"Licence tier 6", "Numbered step two",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("PDF text lacks %q", want)
		}
	}
	// Every page carries the header.
	if got := strings.Count(text, fixture.Header); got < pages {
		t.Errorf("header appears %d times on %d pages", got, pages)
	}
}

// TestHostileContentFetchesNothing feeds the renderer a template that tries
// every way to reach the file system or the network, and checks that a local
// canary server sees no request and no file content leaks into the PDF.
func TestHostileContentFetchesNothing(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hits.Add(1)
		t.Logf("canary hit: %s %s", req.Method, req.URL)
		fmt.Fprint(w, "CANARY-BODY")
	}))
	t.Cleanup(canary.Close)
	u := canary.URL

	tests := []struct {
		name string
		html string
	}{
		{"iframe file", `<iframe src="file:///etc/passwd" width="600" height="400"></iframe>`},
		{"iframe http", `<iframe src="` + u + `/frame"></iframe>`},
		{"img", `<img src="` + u + `/img.png"><img srcset="` + u + `/set.png 2x">`},
		{"css import", `<style>@import url("` + u + `/import.css"); @import "file:///etc/passwd";</style>`},
		{"css background", `<div style="background-image:url(` + u + `/bg.png)">bg</div><style>p{background:url('` + u + `/p.png')}</style>`},
		{"css escapes", `<style>p{background:u\72 l(` + u + `/esc.png)}</style><div style="background:u\72 l(` + u + `/esc2.png)">e</div>`},
		{"css image-set", `<div style="background-image:image-set(&quot;` + u + `/set1.png&quot; 1x)">s</div>`},
		{"font face", `<style>@font-face{font-family:x;src:url(` + u + `/font.woff)} p{font-family:x}</style>`},
		{"meta refresh", `<meta http-equiv="refresh" content="0;url=` + u + `/refresh">`},
		{"meta refresh file", `<meta http-equiv="refresh" content="0;url=file:///etc/passwd">`},
		{"link stylesheet", `<link rel="stylesheet" href="` + u + `/link.css"><link rel="prefetch" href="` + u + `/prefetch">`},
		{"object embed", `<object data="file:///etc/passwd"></object><embed src="` + u + `/embed">`},
		{"script", `<script>fetch("` + u + `/script")</script><img src=x onerror="fetch('` + u + `/onerror')">`},
		{"svg image", `<svg><image href="` + u + `/svg.png"/></svg>`},
		{"video poster", `<video poster="` + u + `/poster.png"></video>`},
		{"base", `<base href="` + u + `/"><img src="relative.png">`},
	}
	r := newRenderer(t, 100, nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			job := renderq.Job{
				Format: renderq.PDF,
				Title:  "hostile",
				HTML:   "<p>VISIBLE-" + strings.ReplaceAll(tc.name, " ", "-") + "</p>" + tc.html,
				Header: [3]string{"h", "", ""},
			}
			data, err := r.Render(t.Context(), job)
			if err != nil {
				t.Fatal(err)
			}
			text := pdfText(t, data)
			if !strings.Contains(text, "VISIBLE-") {
				t.Errorf("content missing from PDF:\n%s", text)
			}
			for _, leak := range []string{"root:", "CANARY-BODY"} {
				if strings.Contains(text, leak) {
					t.Errorf("PDF text contains %q:\n%s", leak, text)
				}
			}
		})
	}
	// Give a late request (a meta refresh fires after a delay) a chance.
	t.Cleanup(func() {
		time.Sleep(300 * time.Millisecond)
		if n := hits.Load(); n != 0 {
			t.Errorf("canary saw %d requests, want 0", n)
		}
	})
}

// TestRestartAfterJobs checks the browser is replaced after RestartAfter jobs
// and that the replacement keeps printing.
func TestRestartAfterJobs(t *testing.T) {
	t.Parallel()
	var restarts atomic.Int32
	r := newRenderer(t, 2, &restarts)
	job := renderq.Job{Format: renderq.PDF, HTML: "<p>short</p>"}
	for i := range 5 {
		if _, err := r.Render(t.Context(), job); err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
	}
	if got := restarts.Load(); got != 2 {
		t.Errorf("restarts = %d, want 2 (after jobs 2 and 4)", got)
	}
}

// TestPrintParamsFollowJob: tagging, and the outline that comes with it,
// follow the job (and so its key), never a worker setting that the key does
// not see.
func TestPrintParamsFollowJob(t *testing.T) {
	t.Parallel()
	for _, tagged := range []bool{false, true} {
		p := pdf.PrintParams(renderq.Job{Format: renderq.PDF, Tagged: tagged})
		if p.GenerateTaggedPDF == nil || *p.GenerateTaggedPDF != tagged {
			t.Errorf("job Tagged=%v: GenerateTaggedPDF = %v", tagged, p.GenerateTaggedPDF)
		}
		if p.GenerateDocumentOutline == nil || *p.GenerateDocumentOutline != tagged {
			t.Errorf("job Tagged=%v: GenerateDocumentOutline = %v", tagged, p.GenerateDocumentOutline)
		}
	}
}

func TestMissingChromium(t *testing.T) {
	t.Parallel()
	r, err := pdf.New(pdf.Config{ChromePath: "/nonexistent/chromium", Tabs: 1, RestartAfter: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err = r.Render(ctx, renderq.Job{Format: renderq.PDF, HTML: "<p>x</p>"})
	if !errors.Is(err, pdf.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}
