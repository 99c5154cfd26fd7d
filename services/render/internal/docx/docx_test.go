package docx_test

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/services/render/fixture"
	"github.com/opencrm/crm/services/render/internal/docx"
)

// unzip returns every part of the archive, checking each is well-formed XML.
func unzip(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("not a zip: %v", err)
	}
	parts := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		parts[f.Name] = b
		dec := xml.NewDecoder(bytes.NewReader(b))
		for {
			_, err := dec.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s is not well-formed XML: %v", f.Name, err)
			}
		}
	}
	return parts
}

type relationships struct {
	Rels []struct {
		ID     string `xml:"Id,attr"`
		Type   string `xml:"Type,attr"`
		Target string `xml:"Target,attr"`
	} `xml:"Relationship"`
}

type contentTypes struct {
	Defaults []struct {
		Extension string `xml:"Extension,attr"`
	} `xml:"Default"`
	Overrides []struct {
		PartName string `xml:"PartName,attr"`
	} `xml:"Override"`
}

func TestPackageIsConsistent(t *testing.T) {
	t.Parallel()
	data, err := docx.Render(fixture.Contract(renderq.DOCX, fixture.Sections))
	if err != nil {
		t.Fatal(err)
	}
	parts := unzip(t, data)

	var ct contentTypes
	if err := xml.Unmarshal(parts["[Content_Types].xml"], &ct); err != nil {
		t.Fatal(err)
	}
	typed := map[string]bool{}
	for _, o := range ct.Overrides {
		typed[strings.TrimPrefix(o.PartName, "/")] = true
	}
	var defaults []string
	for _, d := range ct.Defaults {
		defaults = append(defaults, d.Extension)
	}
	// Every part has a content type, and every override names a part.
	for name := range parts {
		if name == "[Content_Types].xml" {
			continue
		}
		if !typed[name] && !slices.Contains(defaults, path.Ext(name)[1:]) {
			t.Errorf("part %s has no content type", name)
		}
	}
	for name := range typed {
		if parts[name] == nil {
			t.Errorf("content type override for missing part %s", name)
		}
	}

	// Every relationship target exists, and every r:id the document uses is
	// declared.
	ids := map[string]bool{}
	for _, relsPart := range []string{"_rels/.rels", "word/_rels/document.xml.rels"} {
		var rels relationships
		if err := xml.Unmarshal(parts[relsPart], &rels); err != nil {
			t.Fatalf("%s: %v", relsPart, err)
		}
		base := path.Dir(path.Dir(relsPart))
		for _, r := range rels.Rels {
			target := path.Join(base, r.Target)
			if parts[target] == nil {
				t.Errorf("%s: %s points at missing %s", relsPart, r.ID, target)
			}
			if relsPart != "_rels/.rels" {
				ids[r.ID] = true
			}
		}
	}
	doc := string(parts["word/document.xml"])
	for _, id := range []string{"rIdHeader1", "rIdFooter1"} {
		if !strings.Contains(doc, `r:id="`+id+`"`) || !ids[id] {
			t.Errorf("document does not reference declared relationship %s", id)
		}
	}

	// Header and footer: three tab-separated cells with PAGE and NUMPAGES.
	tests := []struct {
		part string
		want []string
	}{
		{"word/header1.xml", []string{fixture.Header, "Müller &amp; Söhne", fixture.Number, `<w:tab/>`}},
		{"word/footer1.xml", []string{"Confidential", "Page ", " PAGE ", " of ", " NUMPAGES ", "OpenCRM", `<w:tab w:val="right"`}},
	}
	for _, tc := range tests {
		got := string(parts[tc.part])
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s lacks %q", tc.part, w)
			}
		}
	}
	// Deterministic: the same job gives the same bytes.
	again, err := docx.Render(fixture.Contract(renderq.DOCX, fixture.Sections))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, again) {
		t.Error("two renders of the same job differ")
	}
}

func pandoc(t *testing.T, data []byte) string {
	t.Helper()
	cmd := exec.Command("pandoc", "-f", "docx", "-t", "plain", "--wrap=none")
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pandoc: %v: %s", err, stderr.String())
	}
	return string(out)
}

// TestPandocReadsContent checks the text a real reader gets. pandoc drops
// headers and footers, so those are checked in the XML above.
func TestPandocReadsContent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		html string
		want string
	}{
		{"headings and inline", `<h1>Title</h1><p>A <b>bold</b>, <i>italic</i> and <u>underlined</u> word.</p><h3>Sub</h3>`,
			"Title\n\nA bold, italic and underlined word.\n\nSub\n"},
		{"line break", `<p>one<br>two</p>`, "one\ntwo\n"},
		{"unordered list", `<ul><li>apple</li><li><p>pear</p></li></ul>`, "-   apple\n\n-   pear\n"},
		{"ordered lists restart", `<ol><li>a</li><li>b</li></ol><p>x</p><ol><li>c</li></ol>`, "1.  a\n\n2.  b\n\nx\n\n1.  c\n"},
		{"nested list", `<ul><li>outer<ul><li>inner</li></ul></li></ul>`, "-   outer\n\n    -   inner\n"},
		{"table", `<table><tr><th>K</th><th>V</th></tr><tr><td>a</td><td>1</td></tr></table>`,
			"  " + strings.Repeat("-", 35) + " " + strings.Repeat("-", 35) + "\n  K" + strings.Repeat(" ", 35) + "V\n\n  a" +
				strings.Repeat(" ", 35) + "1\n  " + strings.Repeat("-", 35) + " " + strings.Repeat("-", 35) + "\n"},
		{"escaping", `<p>5 &lt; 6 &amp; "quotes"</p>`, "5 < 6 & \"quotes\"\n"},
		{"hostile content dropped", `<p>ok</p><script>alert(1)</script><iframe src="file:///etc/passwd"></iframe>`, "ok\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data, err := docx.Render(renderq.Job{Format: renderq.DOCX, HTML: tc.html})
			if err != nil {
				t.Fatal(err)
			}
			unzip(t, data)
			if diff := cmp.Diff(tc.want, pandoc(t, data)); diff != "" {
				t.Errorf("pandoc text (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPageBreak(t *testing.T) {
	t.Parallel()
	data, err := docx.Render(renderq.Job{Format: renderq.DOCX,
		HTML: `<p>one</p><hr class="page-break"><p style="page-break-before: always">two</p>`})
	if err != nil {
		t.Fatal(err)
	}
	doc := string(unzip(t, data)["word/document.xml"])
	if got := strings.Count(doc, `<w:br w:type="page"/>`); got != 2 {
		t.Errorf("page breaks = %d, want 2", got)
	}
}

func TestContractThroughPandoc(t *testing.T) {
	t.Parallel()
	data, err := docx.Render(fixture.Contract(renderq.DOCX, fixture.Sections))
	if err != nil {
		t.Fatal(err)
	}
	text := pandoc(t, data)
	for _, want := range []string{fixture.Number, fixture.Company, "Licence tier 6", "Numbered step two", "Second obligation with bold text"} {
		if !strings.Contains(text, want) {
			t.Errorf("pandoc text lacks %q", want)
		}
	}
}

// body returns the content of <w:body> before the section properties.
func body(t *testing.T, data []byte) string {
	t.Helper()
	doc := string(unzip(t, data)["word/document.xml"])
	start := strings.Index(doc, "<w:body>")
	end := strings.Index(doc, "<w:sectPr>")
	if start < 0 || end < start {
		t.Fatalf("no body in document.xml: %s", doc)
	}
	return doc[start+len("<w:body>") : end]
}

// TestPreservedWhiteSpace checks that <pre> and white-space: pre, pre-wrap
// and pre-line keep line breaks (and, but for pre-line, spaces and tabs) as
// the PDF does, while normal text still collapses.
func TestPreservedWhiteSpace(t *testing.T) {
	t.Parallel()
	const code = `<w:p><w:pPr><w:pStyle w:val="Code"/></w:pPr>`
	tests := []struct {
		name string
		html string
		want string
	}{
		{"pre keeps newlines and leading spaces", "<pre>Licensee:\n  Acme GmbH\n  Hauptstraße 1</pre>",
			code + `<w:r><w:t xml:space="preserve">Licensee:</w:t><w:br/><w:t xml:space="preserve">  Acme GmbH</w:t><w:br/>` +
				`<w:t xml:space="preserve">  Hauptstraße 1</w:t></w:r></w:p>`},
		{"pre keeps tabs, blank lines and inline formatting", "<pre>a\tb\n\n<b>c  d</b>\n</pre>",
			code + `<w:r><w:t xml:space="preserve">a</w:t><w:tab/><w:t xml:space="preserve">b</w:t></w:r>` +
				`<w:r><w:rPr><w:b/></w:rPr><w:br/><w:br/><w:t xml:space="preserve">c  d</w:t></w:r></w:p>`},
		{"pre-wrap", "<p style=\"white-space: pre-wrap\">Name:   Acme\n\tTier 6 </p>",
			`<w:p><w:r><w:t xml:space="preserve">Name:   Acme</w:t><w:br/><w:tab/><w:t xml:space="preserve">Tier 6 </w:t></w:r></w:p>`},
		{"pre on a div reaches descendants", "<div style=\"color: red; white-space: pre\"><span>x\n y</span></div>",
			`<w:p><w:r><w:t xml:space="preserve">x</w:t><w:br/><w:t xml:space="preserve"> y</w:t></w:r></w:p>`},
		{"pre-line collapses spaces but keeps newlines", "<p style=\"white-space:pre-line\">  one   two  \n\t three\n</p>",
			`<w:p><w:r><w:t xml:space="preserve">one two</w:t><w:br/><w:t xml:space="preserve">three</w:t></w:r></w:p>`},
		{"normal inside pre collapses again", "<pre>a\n<span style=\"white-space: normal\">b\n   c</span></pre>",
			code + `<w:r><w:t xml:space="preserve">a</w:t></w:r><w:r><w:br/></w:r><w:r><w:t xml:space="preserve">b c</w:t></w:r></w:p>`},
		{"normal paragraph still collapses", "<p>one\n  two\n\tthree</p>",
			`<w:p><w:r><w:t xml:space="preserve">one two three</w:t></w:r></w:p>`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data, err := docx.Render(renderq.Job{Format: renderq.DOCX, HTML: tc.html})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, body(t, data)); diff != "" {
				t.Errorf("document.xml body (-want +got):\n%s", diff)
			}
			again, err := docx.Render(renderq.Job{Format: renderq.DOCX, HTML: tc.html})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, again) {
				t.Error("two renders of the same job differ")
			}
		})
	}
}

// TestTitleAndLanguage: the document's title and language are in its core
// properties (dc:title, dc:language) and its default run language (w:lang
// in the styles' docDefaults), where Word and screen readers take them from.
func TestTitleAndLanguage(t *testing.T) {
	t.Parallel()
	type core struct {
		Title    string `xml:"title"`
		Language string `xml:"language"`
	}
	type styles struct {
		Lang struct {
			Val string `xml:"val,attr"`
		} `xml:"docDefaults>rPrDefault>rPr>lang"`
	}
	tests := []struct {
		name, title, lang, wantLang string
	}{
		{"no language named: the default", "CTR-1 Müller & Söhne <MSA>", "", "en"},
		{"German (Austria)", "CTR-2 Vertrag", "de-AT", "de-AT"},
	}
	for _, tc := range tests {
		data, err := docx.Render(renderq.Job{Format: renderq.DOCX, Title: tc.title, Lang: tc.lang, HTML: "<p>x</p>"})
		if err != nil {
			t.Fatal(err)
		}
		parts := unzip(t, data)
		var c core
		if err := xml.Unmarshal(parts["docProps/core.xml"], &c); err != nil {
			t.Fatal(err)
		}
		var s styles
		if err := xml.Unmarshal(parts["word/styles.xml"], &s); err != nil {
			t.Fatal(err)
		}
		got := []string{c.Title, c.Language, s.Lang.Val}
		if diff := cmp.Diff([]string{tc.title, tc.wantLang, tc.wantLang}, got); diff != "" {
			t.Errorf("%s: title, dc:language, w:lang (-want +got):\n%s", tc.name, diff)
		}
	}
}
