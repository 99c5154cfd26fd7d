package api_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/fuzzcheck"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// Layout bits of FuzzSignedCopyUpload: what surrounds the fuzzed part.
const (
	layoutFieldBefore = 1 << iota // a plain form field before the file part
	layoutSecondFile              // another file part after it
	layoutTruncated               // no closing boundary
	layoutNoLength                // Content-Length unknown (-1)
	layoutMixed                   // multipart/mixed instead of form-data
)

// Sizes of FuzzSignedCopyUpload besides the fuzzed content: a valid PDF
// exactly at the limit, one byte over it, and a body over the request's
// limit (file plus multipart overhead). Rare by design: each costs 25 MB.
const (
	sizeAtLimit = 253 + iota
	sizeOverLimit
	sizeOverBody
)

// FuzzSignedCopyUpload posts arbitrary multipart bodies to POST
// /contracts/{id}/executed: the fuzzed part's headers (name, filename,
// content type), its content, the boundary, surrounding parts, truncation
// and sizes around the 25 MB limit. Whatever is sent: no panic and no 5xx;
// a 4xx is a documented problem that stores nothing (no row, no spool
// file left behind); a 201 stores exactly the bytes of the first part
// named "file", as the download shows.
func FuzzSignedCopyUpload(f *testing.F) {
	e := newEnv(f)
	e.deals.set(1, mergeFor(1, "Fuzz deal", "Acme"))
	h := e.srv.Config.Handler
	spoolDir := f.TempDir()
	f.Setenv("TMPDIR", spoolDir)
	tpl := setupID(f, h, http.MethodPost, "/contract-templates", e.admin, `{"name":"Fuzz","content":"<p>{{deal.title}}</p>"}`)
	id := setupID(f, h, http.MethodPost, "/contracts", e.user, fmt.Sprintf(`{"deal_id":1,"template_id":%d,"title":"Signed"}`, tpl))
	path := fmt.Sprintf("/contracts/%d/executed", id)

	pdf := string(pdfBytes("signed"))
	for _, s := range []struct {
		layout, size     uint8
		boundary, header string
		content          string
	}{
		{0, 0, "b0undary", `Content-Disposition: form-data; name="file"; filename="signed.pdf"` + "\r\nContent-Type: application/pdf", pdf},
		{layoutFieldBefore | layoutSecondFile, 0, "x", `Content-Disposition: form-data; name="file"; filename="../../etc/passwd"`, pdf},
		{0, 0, "b", `Content-Disposition: form-data; name="file"; filename*=UTF-8''%e2%80%ae%00.pdf`, pdf},
		{0, 0, "b", `Content-Disposition: form-data; name="file"; filename="page.html"` + "\r\nContent-Type: text/html", "<html><script>alert(1)</script></html>"},
		{0, 0, "b", `Content-Disposition: form-data; name="file"; filename="fake.pdf"`, "%PDF-1.7\n<html></html>\n%%EOF\n"},
		{0, 0, "b", `Content-Disposition: form-data; name="file"` + "\r\nContent-Transfer-Encoding: quoted-printable", "%PDF-=\r\n1.4=3D"},
		{0, 0, "b", `Content-Disposition: form-data; name="other"; filename="signed.pdf"`, pdf},
		{0, 0, "b", `Content-Disposition: form-data; name="file"; filename="empty.pdf"`, ""},
		{layoutTruncated, 0, "b", `Content-Disposition: form-data; name="file"; filename="cut.pdf"`, pdf[:len(pdf)/2]},
		{layoutTruncated | layoutNoLength, 0, "b", `Content-Disposition: form-data; name="file"`, pdf},
		{layoutMixed, 0, "b", `Content-Disposition: form-data; name="file"`, pdf},
		{0, 0, `"`, "Content-Disposition: form-data; name=\"file\"\r\nX: \xff", pdf},
		{0, 0, "", "", ""},
		{0, sizeAtLimit, "b", `Content-Disposition: form-data; name="file"; filename="big.pdf"`, ""},
		{layoutNoLength, sizeOverLimit, "b", `Content-Disposition: form-data; name="file"; filename="big.pdf"`, ""},
		{layoutNoLength, sizeOverBody, "b", `Content-Disposition: form-data; name="file"; filename="big.pdf"`, ""},
	} {
		f.Add(s.layout, s.size, s.boundary, s.header, []byte(s.content))
	}
	f.Fuzz(func(t *testing.T, layout, size uint8, boundary, header string, content []byte) {
		switch size {
		case sizeAtLimit:
			content = paddedPDF(contracts.MaxSignedCopy)
		case sizeOverLimit:
			content = paddedPDF(contracts.MaxSignedCopy + 1)
		case sizeOverBody:
			content = paddedPDF(contracts.MaxSignedCopy + 1<<20 + 1)
		}
		body, contentType := uploadBody(layout, boundary, header, content)
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Authorization", "Bearer "+e.user)
		if layout&layoutNoLength != 0 {
			req.ContentLength = -1
		}
		before := fuzzcheck.Snapshot(t, e.db)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		what := fmt.Sprintf("upload (layout %#x, boundary %q, header %q, %d bytes)", layout, boundary, header, len(content))
		t.Logf("%s: %d", what, rec.Code)
		left := takeSpooled(t, spoolDir)
		fuzzcheck.Answer(t, what, rec.Code, rec.Header(), rec.Body.Bytes())
		if len(left) > 0 {
			t.Fatalf("%s: %d: spool files left behind: %v", what, rec.Code, left)
		}
		switch {
		case rec.Code == http.StatusCreated:
			want, err := sentFile(body, contentType)
			if err != nil {
				t.Fatalf("%s: stored an upload whose file part does not read back: %v", what, err)
			}
			got := serve(h, http.MethodGet, path, e.user, "", nil)
			if got.Code != http.StatusOK || !bytes.Equal(got.Body.Bytes(), want) {
				t.Fatalf("%s: download %d, %d bytes; sent %d bytes", what, got.Code, got.Body.Len(), len(want))
			}
			// Back to a contract without a signed copy for the next input.
			if del := serve(h, http.MethodDelete, path, e.admin, "", nil); del.Code != http.StatusOK {
				t.Fatalf("delete signed copy: %d %s", del.Code, del.Body)
			}
		case rec.Code >= 400:
			if diff := cmp.Diff(before, fuzzcheck.Snapshot(t, e.db)); diff != "" {
				t.Fatalf("%s: %d changed rows (-before +after):\n%s", what, rec.Code, diff)
			}
		default:
			t.Fatalf("%s: status %d: %s", what, rec.Code, rec.Body)
		}
	})
}

// takeSpooled lists and removes the files in dir, so that the next input
// (the minimiser's too) starts from an empty spool directory.
func takeSpooled(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// uploadBody builds the multipart body and its Content-Type around one
// part made of the raw header block and content.
func uploadBody(layout uint8, boundary, header string, content []byte) ([]byte, string) {
	var b bytes.Buffer
	if layout&layoutFieldBefore != 0 {
		fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nsigned today\r\n", boundary)
	}
	fmt.Fprintf(&b, "--%s\r\n%s\r\n\r\n", boundary, header)
	b.Write(content)
	b.WriteString("\r\n")
	if layout&layoutSecondFile != 0 {
		fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"second.pdf\"\r\n\r\n%s\r\n",
			boundary, pdfBytes("second"))
	}
	if layout&layoutTruncated == 0 {
		fmt.Fprintf(&b, "--%s--\r\n", boundary)
	}
	media := "multipart/form-data"
	if layout&layoutMixed != 0 {
		media = "multipart/mixed"
	}
	return b.Bytes(), media + `; boundary="` + boundary + `"`
}

// sentFile reads the first part named "file" the way any multipart reader
// would: what a stored signed copy must equal.
func sentFile(body []byte, contentType string) ([]byte, error) {
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, err
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		p, err := mr.NextPart()
		if err != nil {
			return nil, err
		}
		if p.FormName() == "file" {
			return io.ReadAll(p)
		}
		if _, err := io.Copy(io.Discard, p); err != nil {
			return nil, errors.Join(errors.New("part before the file"), err)
		}
	}
}

// paddedPDF is a valid one-page PDF of exactly size bytes: pdfBytes with
// a comment line of pad bytes after the header, the cross-reference
// offsets and startxref moved by it. Their digits grow with pad, so pad is
// adjusted until the sizes add up; the padding is written once.
func paddedPDF(size int) []byte {
	const header = "%PDF-1.4\n"
	for pad := size; ; {
		rest := shiftedPDF(len(header) + len("%\n") + pad)
		if n := len(header) + len("%\n") + pad + len(rest); n != size {
			pad += size - n
			continue
		}
		var b bytes.Buffer
		b.Grow(size)
		b.WriteString(header + "%")
		b.Write(bytes.Repeat([]byte("x"), pad))
		b.WriteString("\n")
		b.WriteString(rest)
		return b.Bytes()
	}
}

// shiftedPDF is pdfBytes without its header line, every offset moved by
// shift-len(header) (the bytes put before the objects instead of it).
func shiftedPDF(shift int) string {
	p := string(pdfBytes("padded"))
	const header = "%PDF-1.4\n"
	shift -= len(header)
	rest := p[len(header):]
	xref := strings.Index(rest, "xref\n")
	lines := strings.Split(rest[xref:], "\n")
	for i, l := range lines {
		var off, gen int
		if n, _ := fmt.Sscanf(l, "%010d %05d n ", &off, &gen); n == 2 && strings.HasSuffix(l, " n ") {
			lines[i] = fmt.Sprintf("%010d %05d n ", off+shift, gen)
		}
		if i > 0 && lines[i-1] == "startxref" {
			var start int
			_, _ = fmt.Sscanf(l, "%d", &start)
			lines[i] = fmt.Sprint(start + shift)
		}
	}
	return rest[:xref] + strings.Join(lines, "\n")
}
