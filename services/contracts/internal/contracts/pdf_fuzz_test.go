package contracts

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// FuzzParseablePDF runs the signed-copy check's PDF parser over arbitrary
// bytes behind a PDF header and end marker (what reaches it in an upload):
// it answers and never panics; pdfcpu does not recover its own panics, and
// one would cost the upload a 500 and its spool file.
func FuzzParseablePDF(f *testing.F) {
	f.Add([]byte("1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] >>\nendobj\nxref\n0 4\n0000000000 65535 f \n0000000009 00000 n \n0000000058 00000 n \n0000000115 00000 n \ntrailer\n<< /Size 4 /Root 1 0 R >>\nstartxref\n199\n"))
	f.Add([]byte("<html><body>not a pdf</body></html>\n"))
	f.Add([]byte("xref\n0 1\n0000000000 65535 f \ntrailer\n<< /Size 1 >>\nstartxref\n0\n"))
	f.Add([]byte("trailer\n<< /Root << /Pages << /Kids [<< /Type /Page >>] /Count -1 >> >> >>\nstartxref\n-1\n"))
	f.Add([]byte(strings.Repeat("[", 1000)))
	// A real one-page document without its header and end marker.
	f.Add(bytes.TrimSuffix(OnePagePDF("signed"), []byte("\n%%EOF\n"))[len("%PDF-1.4\n"):])
	f.Fuzz(func(t *testing.T, body []byte) {
		doc := append(append([]byte("%PDF-1.4\n"), body...), "\n%%EOF\n"...)
		parseablePDF(bytes.NewReader(doc))
	})
}

// OnePagePDF is a real one-page PDF whose page content carries body, with a
// correct cross-reference table (the external tests use it too).
func OnePagePDF(body string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	stream := "% " + strings.ReplaceAll(body, "\n", " ") + "\n"
	objects := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R /Resources << >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", len(stream), stream),
	}
	offsets := make([]int, len(objects))
	for i, o := range objects {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return b.Bytes()
}
