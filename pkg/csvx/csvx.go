// Package csvx is the CSV plumbing shared by every context that imports or
// exports records (contacts, leads): tolerant reading of what spreadsheets
// produce and safe streaming writing of what spreadsheets open. It holds no
// business rule of a context — which columns exist, which are required and
// what a valid value is stay with the caller.
//
// # Reading
//
//	cols := []csvx.Column{
//		{Name: "first_name", Aliases: []string{"First", "Given Name"}, Required: true},
//		{Name: "email", Aliases: []string{"E-mail", "Email Address"}},
//	}
//	r, err := csvx.NewReader(file, cols, csvx.Limits{MaxBytes: 20 << 20, MaxRows: 100_000})
//	if err != nil { ... }                 // 413 / 422 problem: reject the whole file
//	for {
//		rec, err := r.Next()
//		if err == io.EOF { break }
//		if err != nil { ... }             // 413 / 422 problem: reject the whole file
//		rec.Row                           // spreadsheet row: header is row 1
//		rec.Get("email")                  // "" when the column is absent
//	}
//
// NewReader strips a UTF-8 byte order mark, detects the delimiter (comma or
// semicolon, from the header line), refuses binary content, and matches
// header cells to columns case-, space- and punctuation-insensitively
// ("First Name", "first_name" and "FIRST-NAME" are one column), including
// aliases. Unknown columns are ignored; a missing required column rejects
// the file. Quoted cells may hold delimiters, doubled quotes and line
// breaks (RFC 4180).
//
// Every error NewReader and Next return is a *problem.Error: 413
// payload_too_large for a file over Limits, 422 validation_failed (field
// "file") for anything structurally wrong — empty, not text, missing
// required columns, unclosed or stray quotes. A caller that wants "a
// rejected file imports nothing" reads every record before writing any.
//
// # Writing
//
// Writer is a streaming RFC 4180 writer that neutralises spreadsheet
// formula injection: a cell starting with = + - @, tab or carriage return
// gets a leading apostrophe (OWASP's advice), so opening an export never
// runs a formula an attacker typed into a name field. It flushes to the
// destination every FlushEvery records, so an HTTP export streams in
// constant memory.
package csvx

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/opencrm/crm/pkg/problem"
)

// FileField is the field name 422 errors carry: the multipart field of an
// upload is called "file" across the API.
const FileField = "file"

// Limits bound what a reader accepts; zero means unlimited.
type Limits struct {
	// MaxBytes caps the bytes read from the source, BOM included.
	MaxBytes int64
	// MaxRows caps the data rows (the header is not counted).
	MaxRows int
}

// Column is one column a caller understands.
type Column struct {
	// Name is the canonical name; Record.Get takes it.
	Name string
	// Aliases are other header spellings that mean this column.
	Aliases []string
	// Required columns must appear in the header (their cells may still be
	// empty on a row; that is a row-level rule of the caller).
	Required bool
}

// Normalize folds a header cell for matching: lower case, letters and
// digits only. "E-mail", "e_mail" and " EMAIL " all become "email".
func Normalize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// Record is one data row.
type Record struct {
	// Row is the spreadsheet row number: the header is row 1, the first
	// data record row 2. A quoted cell spanning lines is still one row.
	Row    int
	fields []string
	index  map[string]int
}

// Get returns the cell of the named column, "" when the column is not in
// the file or the row is short.
func (r Record) Get(name string) string {
	i, ok := r.index[name]
	if !ok || i >= len(r.fields) {
		return ""
	}
	return r.fields[i]
}

// Blank reports whether every cell is empty or whitespace (a spreadsheet's
// trailing ",,,," line), so callers can skip it silently.
func (r Record) Blank() bool {
	for _, f := range r.fields {
		if strings.TrimSpace(f) != "" {
			return false
		}
	}
	return true
}

// Reader reads records of a CSV file with a matched header.
type Reader struct {
	cr     *csv.Reader
	src    *limitReader
	lim    Limits
	index  map[string]int
	row    int
	header []string
	comma  rune
}

// errTooLarge marks the byte limit inside the csv reader's error chain.
var errTooLarge = errors.New("csvx: byte limit exceeded")

type limitReader struct {
	r   io.Reader
	n   int64
	max int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.max > 0 && l.n > l.max {
		return 0, errTooLarge
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.max > 0 && l.n > l.max {
		return n, errTooLarge
	}
	return n, err
}

// sniffSize is how much of the file decides its delimiter and whether it
// is text at all.
const sniffSize = 64 << 10

var bom = []byte{0xEF, 0xBB, 0xBF}

// NewReader reads and matches the header. See the package documentation.
func NewReader(src io.Reader, cols []Column, lim Limits) (*Reader, error) {
	lr := &limitReader{r: src, max: lim.MaxBytes}
	br := bufio.NewReaderSize(lr, sniffSize)
	head, err := br.Peek(sniffSize)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		if errors.Is(err, errTooLarge) && len(head) == 0 {
			return nil, tooLarge(lim)
		}
		if !errors.Is(err, errTooLarge) {
			// The body failing under the reader (an upload cut short, a
			// broken multipart stream) is the client's fault, as in Next.
			return nil, fmt.Errorf("csvx: read: %v: %w", err, Invalid("the upload cannot be read: it ended early or is malformed"))
		}
	}
	if bytes.HasPrefix(head, bom) {
		_, _ = br.Discard(len(bom))
		head = head[len(bom):]
	}
	if len(bytes.TrimSpace(head)) == 0 {
		if errors.Is(err, errTooLarge) {
			return nil, tooLarge(lim)
		}
		return nil, Invalid("the file is empty")
	}
	if !isText(head) {
		return nil, Invalid("the file is not a CSV text file")
	}
	r := &Reader{src: lr, lim: lim, comma: Delimiter(head)}
	r.cr = csv.NewReader(br)
	r.cr.Comma = r.comma
	r.cr.FieldsPerRecord = -1
	r.cr.ReuseRecord = false
	header, err := r.cr.Read()
	if err != nil {
		return nil, r.mapErr(err)
	}
	r.row = 1
	r.header = header
	r.index = map[string]int{}
	lookup := map[string]string{}
	for _, c := range cols {
		lookup[Normalize(c.Name)] = c.Name
		for _, a := range c.Aliases {
			if k := Normalize(a); k != "" {
				if _, taken := lookup[k]; !taken {
					lookup[k] = c.Name
				}
			}
		}
	}
	for i, h := range header {
		if name, ok := lookup[Normalize(h)]; ok {
			if _, dup := r.index[name]; !dup {
				r.index[name] = i
			}
		}
	}
	var missing []string
	for _, c := range cols {
		if _, ok := r.index[c.Name]; c.Required && !ok {
			missing = append(missing, c.Name)
		}
	}
	if len(missing) > 0 {
		return nil, Invalid("the header is missing the required column(s): " + strings.Join(missing, ", "))
	}
	return r, nil
}

// Delimiter picks ';' when the first line (outside quotes) holds more
// semicolons than commas — what spreadsheets in comma-decimal locales
// write — and ',' otherwise.
func Delimiter(head []byte) rune {
	commas, semis := 0, 0
	inQuote := false
	for _, b := range head {
		switch {
		case b == '"':
			inQuote = !inQuote
		case inQuote:
		case b == '\n':
			if semis > commas {
				return ';'
			}
			return ','
		case b == ',':
			commas++
		case b == ';':
			semis++
		}
	}
	if semis > commas {
		return ';'
	}
	return ','
}

// isText refuses binary uploads (spreadsheets in xlsx, images, PDFs): a
// NUL byte, invalid UTF-8, or a sniffed type other than text.
func isText(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	// A multi-byte rune may be cut at the end of the sniffed window.
	check := head
	for i := 0; i < utf8.UTFMax && len(check) > 0 && !utf8.Valid(check); i++ {
		check = check[:len(check)-1]
	}
	if !utf8.Valid(check) {
		return false
	}
	return strings.HasPrefix(http.DetectContentType(head), "text/")
}

// Columns reports which canonical columns the header holds.
func (r *Reader) Columns() []string {
	out := make([]string, 0, len(r.index))
	for name := range r.index {
		out = append(out, name)
	}
	return out
}

// Has reports whether the header holds the named column.
func (r *Reader) Has(name string) bool { _, ok := r.index[name]; return ok }

// Comma is the detected delimiter.
func (r *Reader) Comma() rune { return r.comma }

// Next returns the next record, io.EOF at the end, or a problem error
// that rejects the file.
func (r *Reader) Next() (Record, error) {
	fields, err := r.cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return Record{}, io.EOF
		}
		return Record{}, r.mapErr(err)
	}
	r.row++
	if r.lim.MaxRows > 0 && r.row-1 > r.lim.MaxRows {
		return Record{}, problem.TooLarge(fmt.Sprintf("the file holds more than %d rows", r.lim.MaxRows))
	}
	for _, f := range fields {
		if !utf8.ValidString(f) {
			return Record{}, Invalid(fmt.Sprintf("Row %d: the file is not UTF-8 text", r.row))
		}
		if strings.IndexByte(f, 0) >= 0 {
			return Record{}, Invalid(fmt.Sprintf("Row %d: the file holds a NUL character (it is not a text CSV)", r.row))
		}
	}
	return Record{Row: r.row, fields: fields, index: r.index}, nil
}

func (r *Reader) mapErr(err error) error {
	if errors.Is(err, errTooLarge) {
		return tooLarge(r.lim)
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		row := r.row + 1
		switch {
		case errors.Is(pe.Err, csv.ErrQuote):
			return Invalid(fmt.Sprintf("Row %d: a quoted cell is not closed (or has a stray quote) starting at line %d", row, pe.StartLine))
		case errors.Is(pe.Err, csv.ErrBareQuote):
			return Invalid(fmt.Sprintf("Row %d: a quote appears inside an unquoted cell at line %d", row, pe.Line))
		default:
			return Invalid(fmt.Sprintf("Row %d: the row cannot be read as CSV", row))
		}
	}
	// Anything else is the request body failing under the reader: an
	// upload cut short or a broken multipart stream, the client's fault.
	return fmt.Errorf("csvx: read: %v: %w", err, Invalid("the upload cannot be read: it ended early or is malformed"))
}

func tooLarge(lim Limits) error {
	return problem.TooLarge(fmt.Sprintf("the file exceeds %d bytes", lim.MaxBytes))
}

// Invalid is the 422 problem of a file rejected as a whole.
func Invalid(message string) *problem.Error {
	return problem.Invalid(FileField, message)
}

// Attachment sets the headers of a CSV download named name (DESIGN 8:
// attachment; filename="…", always quoted; name must hold no quote or
// backslash). Exports hold personal data, so no cache keeps a copy.
func Attachment(w http.ResponseWriter, name string) {
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
}

// Escape neutralises a cell a spreadsheet would run as a formula.
func Escape(cell string) string {
	if cell == "" {
		return cell
	}
	switch cell[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + cell
	}
	return cell
}

// DefaultFlushEvery is how many records a Writer buffers before flushing.
const DefaultFlushEvery = 500

// Writer writes formula-safe CSV records and flushes periodically.
type Writer struct {
	cw  *csv.Writer
	dst io.Writer
	// FlushEvery records, the buffer is written out and dst flushed when it
	// can be (http.Flusher, or a Flush() error method).
	FlushEvery int
	n          int
	buf        []string
}

// NewWriter writes comma-separated UTF-8 records with RFC 4180 quoting to
// dst. Lines end in LF, which every spreadsheet reads: encoding/csv's CRLF
// mode would silently drop a lone CR inside a cell.
func NewWriter(dst io.Writer) *Writer {
	return &Writer{cw: csv.NewWriter(dst), dst: dst, FlushEvery: DefaultFlushEvery}
}

// WriteHeader writes cells verbatim (trusted column names).
func (w *Writer) WriteHeader(cells []string) error {
	return w.cw.Write(cells)
}

// Write escapes and writes one record.
func (w *Writer) Write(cells []string) error {
	if cap(w.buf) < len(cells) {
		w.buf = make([]string, len(cells))
	}
	w.buf = w.buf[:len(cells)]
	for i, c := range cells {
		w.buf[i] = Escape(c)
	}
	if err := w.cw.Write(w.buf); err != nil {
		return err
	}
	w.n++
	if w.FlushEvery > 0 && w.n%w.FlushEvery == 0 {
		return w.Flush()
	}
	return nil
}

// Flush writes buffered records and flushes dst when it can.
func (w *Writer) Flush() error {
	w.cw.Flush()
	if err := w.cw.Error(); err != nil {
		return err
	}
	switch f := w.dst.(type) {
	case interface{ Flush() error }:
		return f.Flush()
	case http.Flusher:
		f.Flush()
	}
	return nil
}
