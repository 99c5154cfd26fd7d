package api_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"

	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

func pdfBytes(body string) []byte {
	return []byte("%PDF-1.7\n" + body + "\ntrailer\n<<>>\n%%EOF\n")
}

// multipartBody builds a body with one part; disposition is the part's
// raw Content-Disposition (so odd file names can be sent RFC 2231-encoded).
func multipartBody(t *testing.T, field, disposition string, data []byte) (*bytes.Buffer, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	if disposition == "" {
		disposition = fmt.Sprintf(`form-data; name=%q; filename="signed.pdf"`, field)
	}
	h.Set("Content-Disposition", disposition)
	h.Set("Content-Type", "application/pdf")
	pw, err := mw.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = pw.Write(data)
	_ = mw.Close()
	return &buf, mw.FormDataContentType()
}

func (e *env) upload(t *testing.T, id int64, token string, body io.Reader, contentType string, length int64) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/contracts/%d/executed", e.srv.URL, id), body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = length
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+token)
	return e.send(t, req)
}

func TestSignedCopy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	c := e.createContract(t, 1, tpl, nil)
	id := idOf(c)
	path := fmt.Sprintf("/contracts/%d/executed", id)

	wantProblem(t, e.do(t, http.MethodGet, path, e.user, nil), http.StatusNotFound, "not_found")

	// Larger than one storage chunk, to cover chunking both ways.
	data := pdfBytes(strings.Repeat("0123456789abcdef", 100_000))
	body, ct := multipartBody(t, "file", "", data)
	r := e.upload(t, id, e.user, body, ct, int64(body.Len()))
	if r.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	sum := sha256.Sum256(data)
	got := r.data(t)
	f := got["executed_file"].(map[string]any)
	if got["status"] != "executed" || f["filename"] != "signed.pdf" || f["size"] != float64(len(data)) || f["sha256"] != hex.EncodeToString(sum[:]) {
		t.Fatalf("after upload: status %v file %v", got["status"], f)
	}

	r = e.do(t, http.MethodGet, path, e.user, nil)
	if r.status != http.StatusOK || !bytes.Equal(r.body, data) {
		t.Fatalf("download: %d, %d bytes", r.status, len(r.body))
	}
	for k, v := range map[string]string{
		"Content-Type": "application/pdf", "X-Content-Type-Options": "nosniff",
		"Content-Disposition": `attachment; filename="signed.pdf"; filename*=UTF-8''signed.pdf`,
	} {
		if r.header.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, r.header.Get(k), v)
		}
	}

	wantProblem(t, e.do(t, http.MethodDelete, path, e.user, nil), http.StatusForbidden, "forbidden")
	if r := e.do(t, http.MethodDelete, path, e.admin, nil); r.status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	after := e.do(t, http.MethodGet, fmt.Sprintf("/contracts/%d", id), e.user, nil).data(t)
	if after["status"] != "active" || after["executed_file"] != nil {
		t.Fatalf("after delete: %v %v", after["status"], after["executed_file"])
	}
	wantProblem(t, e.do(t, http.MethodDelete, path, e.admin, nil), http.StatusNotFound, "not_found")
	wantProblem(t, e.do(t, http.MethodGet, path, e.user, nil), http.StatusNotFound, "not_found")

	// A terminated contract takes no signed copy.
	setStatus(t, e, after, "terminated")
	body, ct = multipartBody(t, "file", "", pdfBytes("x"))
	wantProblem(t, e.upload(t, id, e.user, body, ct, int64(body.Len())), http.StatusConflict, "invalid_transition")
}

func TestSignedCopyFilenames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	tests := []struct {
		name        string
		disposition string
		stored      string
		header      string
	}{
		{"path traversal", `form-data; name="file"; filename="../../x.pdf"`, "x.pdf",
			`attachment; filename="x.pdf"; filename*=UTF-8''x.pdf`},
		{"windows path", `form-data; name="file"; filename*=UTF-8''..%5C..%5Cevil.pdf`, "evil.pdf",
			`attachment; filename="evil.pdf"; filename*=UTF-8''evil.pdf`},
		{"header injection", `form-data; name="file"; filename*=UTF-8''a%22%0D%0ASet-Cookie%3A.pdf`, "a_Set-Cookie_.pdf",
			`attachment; filename="a_Set-Cookie_.pdf"; filename*=UTF-8''a_Set-Cookie_.pdf`},
		{"unicode", `form-data; name="file"; filename*=UTF-8''Vertrag%20M%C3%BCller%E2%80%AE.pdf`, "Vertrag Müller.pdf",
			`attachment; filename="Vertrag M_ller.pdf"; filename*=UTF-8''Vertrag%20M%C3%BCller.pdf`},
		{"nothing left", `form-data; name="file"; filename="..."`, "",
			""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := e.createContract(t, 1, tpl, nil)
			body, ct := multipartBody(t, "file", tc.disposition, pdfBytes("x"))
			r := e.upload(t, idOf(c), e.user, body, ct, int64(body.Len()))
			if r.status != http.StatusCreated {
				t.Fatalf("upload: %d %s", r.status, r.body)
			}
			stored := r.data(t)["executed_file"].(map[string]any)["filename"].(string)
			want, header := tc.stored, tc.header
			if want == "" {
				want = c["contract_number"].(string) + "-signed.pdf"
				header = fmt.Sprintf(`attachment; filename="%s"; filename*=UTF-8''%s`, want, want)
			}
			if stored != want {
				t.Errorf("stored filename = %q, want %q", stored, want)
			}
			d := e.do(t, http.MethodGet, fmt.Sprintf("/contracts/%d/executed", idOf(c)), e.user, nil)
			if got := d.header.Get("Content-Disposition"); got != header {
				t.Errorf("Content-Disposition = %q, want %q", got, header)
			}
			if d.header.Get("Set-Cookie") != "" {
				t.Error("header injection reached the response")
			}
		})
	}
}

func TestSignedCopyBadUploads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	c := e.createContract(t, 1, e.createTemplate(t, nil), nil)
	id := idOf(c)
	tests := []struct {
		name   string
		field  string
		data   []byte
		status int
		code   string
		fields []string
	}{
		{"no file part", "other", pdfBytes("x"), http.StatusUnprocessableEntity, "validation_failed", []string{"file"}},
		{"empty file", "file", nil, http.StatusUnprocessableEntity, "validation_failed", []string{"file"}},
		{"html named pdf", "file", []byte("<html><body><script>alert(1)</script></body></html>"), http.StatusUnsupportedMediaType, "unsupported_media_type", nil},
		{"pdf header without trailer", "file", []byte("%PDF-1.7\n" + strings.Repeat("x", 3000)), http.StatusUnsupportedMediaType, "unsupported_media_type", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, ct := multipartBody(t, tc.field, fmt.Sprintf(`form-data; name=%q; filename="signed.pdf"`, tc.field), tc.data)
			wantProblem(t, e.upload(t, id, e.user, body, ct, int64(body.Len())), tc.status, tc.code, tc.fields...)
		})
	}
	t.Run("not multipart", func(t *testing.T) {
		wantProblem(t, e.upload(t, id, e.user, bytes.NewReader(pdfBytes("x")), "application/pdf", -1), http.StatusUnsupportedMediaType, "unsupported_media_type")
	})
	t.Run("declared length over limit", func(t *testing.T) {
		// Refused on the header alone: the body is never sent in full.
		pr, pw := io.Pipe()
		defer pw.Close()
		wantProblem(t, e.upload(t, id, e.user, pr, "multipart/form-data; boundary=x", contracts.MaxSignedCopy+2<<20), http.StatusRequestEntityTooLarge, "payload_too_large")
	})
	t.Run("streamed over limit", func(t *testing.T) {
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		go func() {
			part, err := mw.CreateFormFile("file", "big.pdf")
			if err == nil {
				_, _ = part.Write([]byte("%PDF-1.7\n"))
				chunk := bytes.Repeat([]byte("0"), 1<<20)
				for range 27 {
					if _, err := part.Write(chunk); err != nil {
						break
					}
				}
				_ = mw.Close()
			}
			_ = pw.Close()
		}()
		wantProblem(t, e.upload(t, id, e.user, pr, mw.FormDataContentType(), -1), http.StatusRequestEntityTooLarge, "payload_too_large")
	})
	after := e.do(t, http.MethodGet, fmt.Sprintf("/contracts/%d", id), e.user, nil).data(t)
	if after["status"] != "draft" || after["executed_file"] != nil {
		t.Fatalf("failed uploads changed the contract: %v %v", after["status"], after["executed_file"])
	}
}
