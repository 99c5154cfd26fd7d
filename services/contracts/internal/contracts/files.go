package contracts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/opencrm/crm/pkg/contract/contractsapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/renderq"
)

// MaxSignedCopy bounds a signed copy (25 MB).
const MaxSignedCopy = 25 << 20

// ErrBodyTooLarge is what an upload's reader returns once the body runs
// past the limit its edge set (a request body cut at its size): the core
// answers it as a file over the limit, not as a broken upload.
var ErrBodyTooLarge = errors.New("contracts: upload body over its limit")

// Render renders a contract as PDF or DOCX through the render worker, as a
// render of user (bounded per user, see renderq.Client.Render).
func (s *Service) Render(ctx context.Context, id int64, format renderq.Format, user string) ([]byte, Contract, error) {
	c, err := s.store.GetContract(ctx, id)
	if err != nil {
		return nil, Contract{}, err
	}
	data, err := s.renderer.Render(ctx, renderq.Job{
		Format: format, Title: c.ContractNumber + " " + c.Title,
		HTML: c.Content, Header: c.Header, Footer: c.Footer,
	}, renderq.Interactive, user)
	if err != nil {
		return nil, Contract{}, fmt.Errorf("render contract %d: %w", id, err)
	}
	return data, c, nil
}

// CatalogueHTML is the merge-tag catalogue as a printable document, built
// from the same definition as the JSON catalogue.
func (s *Service) CatalogueHTML() string {
	e := html.EscapeString
	var b strings.Builder
	b.WriteString(`<h1>Contract merge tags</h1><p>Write a tag as <code>{{group.field}}</code> in a template's content or in its header and footer cells (spaces inside the braces and any letter case are accepted). Header and footer cells may also use <code>{{page}}</code> and <code>{{pages}}</code>.</p>`)
	g := s.catalogue.Grouped()
	for _, group := range Groups {
		fmt.Fprintf(&b, `<h2>%s</h2><table class="tags"><thead><tr><th>Tag</th><th>Label</th><th>Description</th><th>Example</th></tr></thead><tbody>`, e(group))
		for _, t := range g.Group(group) {
			fmt.Fprintf(&b, `<tr><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td></tr>`,
				e(t.Tag), e(t.Label), e(t.Description), e(t.Example))
		}
		b.WriteString(`</tbody></table>`)
	}
	return b.String()
}

// RenderCatalogue renders the catalogue as a PDF, as a render of user: the
// same bounds as a contract's PDF.
func (s *Service) RenderCatalogue(ctx context.Context, user string) ([]byte, error) {
	data, err := s.renderer.Render(ctx, renderq.Job{
		Format: renderq.PDF, Title: "Contract merge tags", HTML: s.CatalogueHTML(),
		Footer: [3]string{"", "Page {{page}} of {{pages}}", ""},
	}, renderq.Interactive, user)
	if err != nil {
		return nil, fmt.Errorf("render tag catalogue: %w", err)
	}
	return data, nil
}

// spooled is an upload written to a temporary file and checked.
type spooled struct {
	file   *os.File
	size   int64
	sha256 string
}

func (sp *spooled) close() {
	if sp.file != nil {
		name := sp.file.Name()
		_ = sp.file.Close()
		_ = os.Remove(name)
	}
}

// spool copies r into a temporary file through a size-limited reader,
// hashing as it goes, then checks it is a PDF by content: the "%PDF-"
// header at the start and a "%%EOF" marker in the last kilobyte (else 415),
// then a parse of its structure (else 422: a file dressed as a PDF). Nothing
// beyond the limit is ever read: more than max bytes is 413.
func spool(r io.Reader, max int64) (_ *spooled, err error) {
	f, err := os.CreateTemp("", "contract-upload-*.pdf")
	if err != nil {
		return nil, fmt.Errorf("spool upload: %w", err)
	}
	sp := &spooled{file: f}
	defer func() {
		if err != nil {
			sp.close()
		}
	}()
	h := sha256.New()
	body := &readErrs{r: io.LimitReader(r, max+1)}
	n, err := io.Copy(io.MultiWriter(f, h), body)
	if err != nil {
		switch {
		case errors.Is(err, ErrBodyTooLarge):
			return nil, fault.TooLargef("the file exceeds %d bytes", max)
		case body.err != nil:
			// The request body broke off (a cut connection or a multipart
			// stream without its end): the client's fault, not a 500.
			return nil, fmt.Errorf("read upload: %v: %w", err, fault.Invalid("file", "the upload is incomplete or malformed"))
		}
		return nil, fmt.Errorf("spool upload: %w", err)
	}
	if n > max {
		return nil, fault.TooLargef("the file exceeds %d bytes", max)
	}
	if n == 0 {
		return nil, fault.Invalid("file", "is empty")
	}
	sp.size, sp.sha256 = n, hex.EncodeToString(h.Sum(nil))
	ok, err := looksLikePDF(f, n)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.Unsupportedf("the file is not a PDF document")
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if ok, why := parseablePDF(f); !ok {
		slog.Info("signed copy refused: not a parseable PDF", "reason", why)
		return nil, fault.Invalid("file", "is not a readable PDF document (it has a PDF header but does not parse as one)")
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return sp, nil
}

// looksLikePDF checks the header and the end-of-file marker.
func looksLikePDF(f *os.File, size int64) (bool, error) {
	head := make([]byte, 5)
	if _, err := f.ReadAt(head, 0); err != nil {
		return false, nil
	}
	if string(head) != "%PDF-" {
		return false, nil
	}
	tailLen := min(size, 1024)
	tail := make([]byte, tailLen)
	if _, err := f.ReadAt(tail, size-tailLen); err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return bytes.Contains(tail, []byte("%%EOF")), nil
}

// UploadExecuted stores the signed copy of a contract and moves a draft or
// active contract to executed. A contract keeps one signed copy: uploading
// over it is a 409 for everyone, since a replacement would destroy it and
// deleting it is admin-only (contractsapi.DeleteExecuted first). That
// decision is taken in the transaction that writes the copy, on the locked
// contract; the early check before the body is read only spares reading an
// upload that is bound to be refused.
func (s *Service) UploadExecuted(ctx context.Context, id int64, filename string, r io.Reader, uploadedBy *int64) (Contract, error) {
	cur, err := s.store.GetContract(ctx, id)
	if err != nil {
		return Contract{}, err
	}
	// Refuse before reading the body when the state forbids it.
	if !AcceptsSignedCopy(cur.Status) {
		return Contract{}, invalidTransition(cur.Status, Executed)
	}
	if cur.ExecutedFile != nil {
		return Contract{}, errHasSignedCopy()
	}
	sp, err := spool(r, MaxSignedCopy)
	if err != nil {
		return Contract{}, err
	}
	defer sp.close()
	name := SanitizeFilename(filename)
	if name == "" {
		name = SanitizeFilename(cur.ContractNumber + "-signed.pdf")
	}
	name = pdfName(name)
	return s.store.PutExecutedFile(ctx, id, NewExecutedFile{
		Filename: name, Size: sp.size, SHA256: sp.sha256, UploadedBy: uploadedBy, Data: sp.file,
	}, func(c *Contract, replacing bool) error {
		if !AcceptsSignedCopy(c.Status) {
			return invalidTransition(c.Status, Executed)
		}
		if replacing {
			return errHasSignedCopy()
		}
		c.Status = Executed
		return nil
	})
}

// errHasSignedCopy refuses an upload over an existing signed copy.
func errHasSignedCopy() error {
	return fault.Conflict("conflict", "this contract already has a signed copy; an admin deletes it ("+
		contractsapi.DeleteExecuted.Pattern()+") before another is uploaded")
}

// StreamExecuted streams the signed copy; start receives its metadata and
// returns where to write (the handler sets the headers there). A missing
// contract and a missing copy are both 404.
// A copy stored before names were forced to ".pdf" is downloaded under its
// ".pdf" name too.
func (s *Service) StreamExecuted(ctx context.Context, id int64, start func(ExecutedFile) (io.Writer, error)) error {
	return s.store.StreamExecutedFile(ctx, id, func(f ExecutedFile) (io.Writer, error) {
		f.Filename = pdfName(f.Filename)
		return start(f)
	})
}

// DeleteExecuted removes the signed copy; an executed contract returns to
// active.
func (s *Service) DeleteExecuted(ctx context.Context, id int64) (Contract, error) {
	return s.store.DeleteExecutedFile(ctx, id, func(c *Contract) error {
		if c.Status == Executed {
			c.Status = Active
		}
		return nil
	})
}

// SanitizeFilename makes an uploaded file name safe to store and to send
// back in Content-Disposition: only the last path element is kept (both /
// and \ separate), control and formatting characters (CR, LF, NUL, bidi
// overrides) are dropped, characters that are special in headers or file
// systems (" \ / : * ? < > | ;) become "_", leading dots and spaces are
// trimmed, and the name is cut to 255 bytes on a character boundary.
func SanitizeFilename(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == utf8.RuneError, unicode.IsControl(r), unicode.Is(unicode.Cf, r):
			continue
		case strings.ContainsRune(`"\/:*?<>|;`, r):
			b.WriteByte('_')
		default:
			b.WriteRune(r)
		}
	}
	out := strings.TrimLeft(strings.TrimSpace(b.String()), ". ")
	for len(out) > 255 {
		_, size := utf8.DecodeLastRuneInString(out)
		out = out[:len(out)-size]
	}
	return out
}

// ContentDisposition builds an RFC 6266 attachment header: an ASCII
// fallback filename="..." (non-ASCII and % become _) and the exact UTF-8
// name as filename*=UTF-8”... (RFC 8187 percent-encoding). name must
// already be sanitised.
func ContentDisposition(name string) string {
	var ascii strings.Builder
	for _, r := range name {
		if r < 0x20 || r > 0x7e || r == '%' || r == '"' || r == '\\' {
			ascii.WriteByte('_')
			continue
		}
		ascii.WriteRune(r)
	}
	var ext strings.Builder
	for _, c := range []byte(name) {
		if isAttrChar(c) {
			ext.WriteByte(c)
		} else {
			fmt.Fprintf(&ext, "%%%02X", c)
		}
	}
	return fmt.Sprintf(`attachment; filename="%s"; filename*=UTF-8''%s`, ascii.String(), ext.String())
}

// isAttrChar is RFC 8187's attr-char.
func isAttrChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$&+-.^_`|~", c) >= 0
}

// readErrs remembers whether an error came from reading the upload, so a
// broken request body is told apart from a failing spool file.
type readErrs struct {
	r   io.Reader
	err error
}

func (e *readErrs) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}
