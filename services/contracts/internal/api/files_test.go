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

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// pdfBytes is a real one-page PDF whose page content carries body (so each
// body gives a different file), with a correct cross-reference table.
func pdfBytes(body string) []byte {
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
		// The content is a PDF, so the name says so: never .html, .svg or
		// none, which a browser or desktop would open as something else.
		{"html name", `form-data; name="file"; filename="contract.html"`, "contract.html.pdf",
			`attachment; filename="contract.html.pdf"; filename*=UTF-8''contract.html.pdf`},
		{"no extension", `form-data; name="file"; filename="signed"`, "signed.pdf",
			`attachment; filename="signed.pdf"; filename*=UTF-8''signed.pdf`},
		{"upper-case extension kept", `form-data; name="file"; filename="SIGNED.PDF"`, "SIGNED.PDF",
			`attachment; filename="SIGNED.PDF"; filename*=UTF-8''SIGNED.PDF`},
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
			for k, v := range map[string]string{"Content-Type": "application/pdf", "X-Content-Type-Options": "nosniff"} {
				if got := d.header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
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
		// Dressed as a PDF (header and end marker) but HTML inside: it does
		// not parse, so it is refused, never stored to be served later.
		{"html with pdf header and end marker", "file", []byte("%PDF-1.7\n<html><body><script>alert(1)</script></body></html>\n%%EOF\n"), http.StatusUnprocessableEntity, "validation_failed", []string{"file"}},
		{"truncated pdf", "file", pdfBytes("x")[:200], http.StatusUnsupportedMediaType, "unsupported_media_type", nil},
		{"pdf without its catalog", "file", bytes.Replace(pdfBytes("x"), []byte("/Root 1 0 R"), []byte("/Root 9 0 R"), 1), http.StatusUnprocessableEntity, "validation_failed", []string{"file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, ct := multipartBody(t, tc.field, fmt.Sprintf(`form-data; name=%q; filename="signed.pdf"`, tc.field), tc.data)
			wantProblem(t, e.upload(t, id, e.user, body, ct, int64(body.Len())), tc.status, tc.code, tc.fields...)
		})
	}
	t.Run("cut short", func(t *testing.T) {
		// The multipart stream ends inside the file, without its closing
		// boundary: the client's broken upload, a 422.
		body, ct := multipartBody(t, "file", `form-data; name="file"; filename="signed.pdf"`, pdfBytes("x"))
		raw := body.Bytes()
		cut := bytes.NewReader(raw[:bytes.LastIndex(raw, []byte("\r\n--"))])
		wantProblem(t, e.upload(t, id, e.user, cut, ct, int64(cut.Len())), http.StatusUnprocessableEntity, "validation_failed", "file")
	})
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

// problemBody checks that r is a problem+json answer with status and
// returns its body.
func problemBody(t *testing.T, r response, status int) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != problem.ContentType {
		t.Fatalf("Content-Type = %q, want %q", ct, problem.ContentType)
	}
	return r.json(t)
}

// conflictBody is the exact 409 body r must carry.
func conflictBody(r response, detail string) map[string]any {
	b := map[string]any{"type": "/docs/problems#conflict", "title": "Conflict", "status": float64(http.StatusConflict),
		"detail": detail, "code": "conflict"}
	if id := r.header.Get(httpx.RequestIDHeader); id != "" {
		b["request_id"] = id
	}
	return b
}

const (
	replaceRefused = "this contract already has a signed copy; an admin deletes it (DELETE /contracts/{id}/executed) before another is uploaded"
	deleteRefused  = "this contract has a signed copy; an admin deletes it (DELETE /contracts/{id}/executed) before the contract can be deleted"
)

// uploadPDF uploads data as the signed copy of contract id.
func (e *env) uploadPDF(t *testing.T, id int64, token, filename string, data []byte) response {
	t.Helper()
	body, ct := multipartBody(t, "file", fmt.Sprintf(`form-data; name="file"; filename=%q`, filename), data)
	return e.upload(t, id, token, body, ct, int64(body.Len()))
}

// state is what a refused request must leave untouched: the contract
// record, its notes and the bytes of its signed copy.
type state struct {
	Contract map[string]any
	Notes    any
	Download int
	Bytes    []byte
}

func (e *env) state(t *testing.T, id int64) state {
	t.Helper()
	base := fmt.Sprintf("/contracts/%d", id)
	c := e.do(t, http.MethodGet, base, e.user, nil)
	if c.status != http.StatusOK {
		t.Fatalf("get contract: %d %s", c.status, c.body)
	}
	n := e.do(t, http.MethodGet, base+"/notes", e.user, nil)
	if n.status != http.StatusOK {
		t.Fatalf("get notes: %d %s", n.status, n.body)
	}
	d := e.do(t, http.MethodGet, base+"/executed", e.user, nil)
	return state{Contract: c.data(t), Notes: n.json(t)["data"], Download: d.status, Bytes: d.body}
}

// TestSignedCopyIsNeverReplaced: a contract keeps one signed copy; an
// upload over it is refused for every role, since deleting it is
// admin-only and a replacement would destroy it.
func TestSignedCopyIsNeverReplaced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	oldPDF, newPDF := pdfBytes("old signed copy"), pdfBytes("new signed copy")
	tests := []struct {
		name       string
		admin      bool
		hasCopy    bool
		wantStatus int
		wantDetail string // for a refusal
	}{
		{"user uploads the first copy", false, false, http.StatusCreated, ""},
		{"admin uploads the first copy", true, false, http.StatusCreated, ""},
		{"user cannot replace the copy", false, true, http.StatusConflict, replaceRefused},
		{"admin cannot replace the copy either", true, true, http.StatusConflict, replaceRefused},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			token := e.user
			if tc.admin {
				token = e.admin
			}
			id := idOf(e.createContract(t, 1, tpl, nil))
			if tc.hasCopy {
				if r := e.uploadPDF(t, id, e.user, "old.pdf", oldPDF); r.status != http.StatusCreated {
					t.Fatalf("first upload: %d %s", r.status, r.body)
				}
			}
			before := e.state(t, id)

			r := e.uploadPDF(t, id, token, "new.pdf", newPDF)

			if tc.wantDetail != "" {
				if diff := cmp.Diff(conflictBody(r, tc.wantDetail), problemBody(t, r, tc.wantStatus)); diff != "" {
					t.Errorf("refusal body (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(before, e.state(t, id)); diff != "" {
					t.Errorf("a refused upload changed the contract (-want +got):\n%s", diff)
				}
				if before.Download != http.StatusOK || !bytes.Equal(before.Bytes, oldPDF) {
					t.Errorf("old copy no longer downloads: %d", before.Download)
				}
				return
			}
			if r.status != tc.wantStatus {
				t.Fatalf("upload: %d, want %d; %s", r.status, tc.wantStatus, r.body)
			}
			sum := sha256.Sum256(newPDF)
			want := map[string]any{"status": "executed", "filename": "new.pdf", "sha256": hex.EncodeToString(sum[:])}
			after := e.state(t, id)
			f := after.Contract["executed_file"].(map[string]any)
			got := map[string]any{"status": after.Contract["status"], "filename": f["filename"], "sha256": f["sha256"]}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("after upload (-want +got):\n%s", diff)
			}
			if after.Download != http.StatusOK || !bytes.Equal(after.Bytes, newPDF) {
				t.Errorf("download after upload: %d, %q", after.Download, after.Bytes)
			}
		})
	}
}

// TestContractWithSignedCopyIsNotDeleted: the signed copy goes first
// (admin-only), then the contract; never both in one user's DELETE.
func TestContractWithSignedCopyIsNotDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	signed := pdfBytes("signed copy")
	tests := []struct {
		name       string
		admin      bool
		hasCopy    bool
		wantStatus int
		wantDetail string // for a refusal
	}{
		{"user deletes a contract without a copy", false, false, http.StatusOK, ""},
		{"admin deletes a contract without a copy", true, false, http.StatusOK, ""},
		{"user cannot delete a contract with a copy", false, true, http.StatusConflict, deleteRefused},
		{"admin cannot delete a contract with a copy either", true, true, http.StatusConflict, deleteRefused},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			token := e.user
			if tc.admin {
				token = e.admin
			}
			id := idOf(e.createContract(t, 1, tpl, nil))
			path := fmt.Sprintf("/contracts/%d", id)
			if tc.hasCopy {
				if r := e.uploadPDF(t, id, e.user, "signed.pdf", signed); r.status != http.StatusCreated {
					t.Fatalf("upload: %d %s", r.status, r.body)
				}
			}
			if r := e.do(t, http.MethodPost, path+"/notes", e.user, map[string]any{"content": "Signed by both"}); r.status != http.StatusCreated {
				t.Fatalf("note: %d %s", r.status, r.body)
			}
			before := e.state(t, id)

			r := e.do(t, http.MethodDelete, path, token, nil)

			if tc.wantDetail != "" {
				if diff := cmp.Diff(conflictBody(r, tc.wantDetail), problemBody(t, r, tc.wantStatus)); diff != "" {
					t.Errorf("refusal body (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(before, e.state(t, id)); diff != "" {
					t.Errorf("a refused delete changed the contract (-want +got):\n%s", diff)
				}
				if before.Download != http.StatusOK || !bytes.Equal(before.Bytes, signed) {
					t.Errorf("signed copy no longer downloads: %d", before.Download)
				}
				return
			}
			if r.status != tc.wantStatus {
				t.Fatalf("delete: %d, want %d; %s", r.status, tc.wantStatus, r.body)
			}
			if diff := cmp.Diff(map[string]any{"success": true, "message": "Contract deleted"}, r.json(t)); diff != "" {
				t.Errorf("delete body (-want +got):\n%s", diff)
			}
			for _, p := range []string{path, path + "/executed", path + "/notes"} {
				wantProblem(t, e.do(t, http.MethodGet, p, e.user, nil), http.StatusNotFound, "not_found")
			}
		})
	}
}

// async sends req in the background; the answer arrives on the channel.
func async(req *http.Request) <-chan response {
	ch := make(chan response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ch <- response{status: -1, body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		ch <- response{status: resp.StatusCode, header: resp.Header, body: b}
	}()
	return ch
}

func (e *env) uploadRequest(t *testing.T, id int64, token string, data []byte) *http.Request {
	t.Helper()
	body, ct := multipartBody(t, "file", "", data)
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/contracts/%d/executed", e.srv.URL, id), body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

// TestSignedCopyCheckUnderConcurrency queues a normal user's second
// request behind their first upload on the contract's row lock. Both pass
// every check made before the lock (the contract has no copy yet), so only
// a decision taken under the lock refuses the second one.
func TestSignedCopyCheckUnderConcurrency(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	first := pdfBytes("first upload")
	tests := []struct {
		name       string
		second     func(t *testing.T, id int64) *http.Request
		wantDetail string
	}{
		{"second upload", func(t *testing.T, id int64) *http.Request {
			return e.uploadRequest(t, id, e.user, pdfBytes("second upload"))
		}, replaceRefused},
		{"delete of the contract", func(t *testing.T, id int64) *http.Request {
			req, err := http.NewRequest(http.MethodDelete, fmt.Sprintf("%s/contracts/%d", e.srv.URL, id), nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+e.user)
			return req
		}, deleteRefused},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := idOf(e.createContract(t, 1, tpl, nil))
			release := testdb.Hold(t, e.db, `SELECT 1 FROM contracts WHERE id = $1 FOR UPDATE`, id)
			firstDone := async(e.uploadRequest(t, id, e.user, first))
			testdb.WaitLockWaiters(t, e.db, 1)
			secondDone := async(tc.second(t, id))
			testdb.WaitLockWaiters(t, e.db, 2)
			release()

			if r := <-firstDone; r.status != http.StatusCreated {
				t.Fatalf("first upload: %d %s", r.status, r.body)
			}
			r := <-secondDone
			if diff := cmp.Diff(conflictBody(r, tc.wantDetail), problemBody(t, r, http.StatusConflict)); diff != "" {
				t.Errorf("second request (-want +got):\n%s", diff)
			}
			after := e.state(t, id)
			if after.Contract["status"] != "executed" || after.Download != http.StatusOK || !bytes.Equal(after.Bytes, first) {
				t.Errorf("after the race: status %v, download %d %q; want executed with the first upload",
					after.Contract["status"], after.Download, after.Bytes)
			}
		})
	}
}

// TestDeleteSignedCopyThenContract: the way out of the 409 is the
// admin-only deletion of the copy, after which the contract deletes.
func TestDeleteSignedCopyThenContract(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	id := idOf(e.createContract(t, 1, e.createTemplate(t, nil), nil))
	path := fmt.Sprintf("/contracts/%d", id)
	if r := e.uploadPDF(t, id, e.user, "signed.pdf", pdfBytes("signed")); r.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	wantProblem(t, e.do(t, http.MethodDelete, path+"/executed", e.user, nil), http.StatusForbidden, "forbidden")
	if r := e.do(t, http.MethodDelete, path+"/executed", e.admin, nil); r.status != http.StatusOK {
		t.Fatalf("admin deletes the copy: %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodDelete, path, e.user, nil); r.status != http.StatusOK {
		t.Fatalf("delete contract: %d %s", r.status, r.body)
	}
	wantProblem(t, e.do(t, http.MethodGet, path, e.user, nil), http.StatusNotFound, "not_found")
}
