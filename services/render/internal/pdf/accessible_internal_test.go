package pdf

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pdfcpu/pdfcpu/pkg/api"

	"github.com/opencrm/crm/pkg/renderq"
)

// accessibility is what a PDF tells a reader and assistive technology about
// itself, read from its catalog and Info dictionary (with pdfcpu, which
// resolves the object streams Chromium compresses them into) and from
// poppler's pdfinfo.
type accessibility struct {
	PdfinfoTagged   string // pdfinfo's "Tagged:" line
	PdfinfoTitle    string // pdfinfo's "Title:" line
	InfoTitle       string // Info /Title
	Lang            string // catalog /Lang
	Marked          bool   // catalog /MarkInfo /Marked
	StructTree      bool   // catalog /StructTreeRoot
	Outline         bool   // catalog /Outlines
	DisplayDocTitle bool   // catalog /ViewerPreferences /DisplayDocTitle
}

func readAccessibility(t *testing.T, data []byte) accessibility {
	t.Helper()
	var a accessibility
	cmd := exec.Command("pdfinfo", "-")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pdfinfo: %v", err)
	}
	line := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `:\s*(.*)$`).FindSubmatch(out)
		if m == nil {
			return ""
		}
		return strings.TrimSpace(string(m[1]))
	}
	a.PdfinfoTagged, a.PdfinfoTitle = line("Tagged"), line("Title")

	ctx, err := api.ReadContext(bytes.NewReader(data), pdfcpuConfig())
	if err != nil {
		t.Fatalf("pdfcpu: %v", err)
	}
	root, err := ctx.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := root["Lang"]; ok {
		if a.Lang, err = ctx.DereferenceText(o); err != nil {
			t.Fatalf("/Lang: %v", err)
		}
	}
	if mi, err := ctx.DereferenceDict(root["MarkInfo"]); err == nil && mi != nil {
		a.Marked = mi.BooleanEntry("Marked") != nil && *mi.BooleanEntry("Marked")
	}
	_, a.StructTree = root["StructTreeRoot"]
	_, a.Outline = root["Outlines"]
	if vp, err := ctx.DereferenceDict(root["ViewerPreferences"]); err == nil && vp != nil {
		a.DisplayDocTitle = vp.BooleanEntry("DisplayDocTitle") != nil && *vp.BooleanEntry("DisplayDocTitle")
	}
	if ctx.Info != nil {
		info, err := ctx.DereferenceDict(*ctx.Info)
		if err != nil {
			t.Fatalf("Info: %v", err)
		}
		if a.InfoTitle, err = ctx.DereferenceText(info["Title"]); err != nil {
			t.Fatalf("Info /Title: %v", err)
		}
	}
	return a
}

// TestAccessiblePDF prints with the real Chromium and checks what makes a
// PDF accessible: tagged (structure tree, /MarkInfo /Marked true, and what
// pdfinfo reports), the title in Info /Title and shown as the window title,
// the language as the catalog's /Lang, and an outline from the headings.
// Untagged printing (RENDER_PDF_TAGGED=false) still gives an untagged file.
func TestAccessiblePDF(t *testing.T) {
	t.Parallel()
	r, err := New(Config{ChromePath: os.Getenv("CHROME_PATH"), Tabs: 2, RestartAfter: 100, NoSandbox: os.Geteuid() == 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)

	const title = "CTR-2026-00042 Müller & Söhne <Master Services Agreement>"
	tests := []struct {
		name   string
		tagged bool
		lang   string
		want   accessibility
	}{
		{"tagged, no language named: the default", true, "", accessibility{
			PdfinfoTagged: "yes", PdfinfoTitle: title, InfoTitle: title, Lang: "en",
			Marked: true, StructTree: true, Outline: true, DisplayDocTitle: true,
		}},
		{"tagged, German (Austria)", true, "de-AT", accessibility{
			PdfinfoTagged: "yes", PdfinfoTitle: title, InfoTitle: title, Lang: "de-AT",
			Marked: true, StructTree: true, Outline: true, DisplayDocTitle: true,
		}},
		// Chromium writes /Lang only into tagged PDFs; the title stays.
		{"untagged", false, "de-AT", accessibility{
			PdfinfoTagged: "no", PdfinfoTitle: title, InfoTitle: title, DisplayDocTitle: true,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			job := renderq.Job{
				Format: renderq.PDF, Title: title, Tagged: tc.tagged, Lang: tc.lang,
				HTML:   "<h1>Master Services Agreement</h1><p>Between the parties.</p><h2>1. Scope</h2><p>The services.</p>",
				Footer: [3]string{"", "Page {{page}} of {{pages}}", ""},
			}
			data, err := r.Render(t.Context(), job)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, readAccessibility(t, data)); diff != "" {
				t.Errorf("accessibility (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDocumentHead: the printed page declares the job's language (or the
// default) and its escaped title, which is where Chromium takes /Lang and
// /Title from.
func TestDocumentHead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lang, title string
		want        []string
	}{
		{"", "Plain", []string{`<html lang="en">`, `<title>Plain</title>`}},
		{"de-AT", `A & B <"C">`, []string{`<html lang="de-AT">`, `<title>A &amp; B &lt;&#34;C&#34;&gt;</title>`}},
	}
	for _, tc := range tests {
		doc, err := Document(renderq.Job{Format: renderq.PDF, Title: tc.title, Lang: tc.lang, HTML: "<p>x</p>"})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range tc.want {
			if !strings.Contains(doc, want) {
				t.Errorf("lang %q: document lacks %s:\n%.300s", tc.lang, want, doc)
			}
		}
	}
}
