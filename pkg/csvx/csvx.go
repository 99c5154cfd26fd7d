// Package csvx is the CSV plumbing shared by every context that imports or
// exports records (contacts, leads): tolerant reading of what spreadsheets
// and other CRMs produce, and safe streaming writing of what spreadsheets
// open. It holds no business rule of a context — which columns exist,
// which are required and what a valid value is stay with the caller.
//
// # Reading
//
//	cols := []csvx.Column{
//		{Name: "first_name", Labels: csvx.KeyFirstName, Required: true},
//		{Name: "email", Labels: csvx.KeyEmail},
//	}
//	r, err := csvx.Open(file, cols, csvx.Options{Limits: csvx.Limits{MaxBytes: 20 << 20, MaxRows: 100_000}})
//	if err != nil { ... }                 // too large / invalid fault: reject the whole file
//	for {
//		rec, err := r.Next()
//		if err == io.EOF { break }
//		if err != nil { ... }             // too large / invalid fault: reject the whole file
//		rec.Row                           // spreadsheet row: header is row 1
//		rec.Get("email")                  // "" when the column is absent
//	}
//	r.Report()                            // encoding, delimiter, ignored columns
//
// Open detects the encoding (UTF-8 with or without BOM, UTF-16 with BOM,
// Windows-1252) and the delimiter (comma, semicolon or tab), refuses
// binary content, and matches header cells to columns case-, space- and
// punctuation-insensitively through the label table of other systems'
// exports (labels.go, documented in docs/import.md). Options.Mapping
// overrides that recognition; Options.FullName splits a single full-name
// column. Unknown columns are reported, not read; a missing required
// column rejects the file. Quoted cells may hold delimiters, doubled
// quotes and line breaks (RFC 4180).
//
// Every error Open and Next return is a *fault.Error, so the edge that
// renders it decides the status: payload_too_large (too large) for a file
// over Limits, validation_failed (invalid: field "file", or "mapping" for
// a bad mapping) for anything structurally wrong — empty, not text,
// missing required columns, unclosed or stray quotes.
//
// # Writing
//
// Writer is a streaming RFC 4180 writer that neutralises spreadsheet
// formula injection: a cell starting with = + - @ ; tab or carriage return
// gets a leading apostrophe (OWASP's advice; ";" because spreadsheets in
// semicolon locales split a cell there), so opening an export never runs a
// formula an attacker typed into a name field. It flushes to the
// destination every FlushEvery records, so an HTTP export streams in
// constant memory.
package csvx

import (
	"encoding/csv"
	"io"
	"net/http"

	"github.com/opencrm/crm/pkg/fault"
)

// FileField is the field name 422 errors carry: the multipart field of an
// upload is called "file" across the API.
const FileField = "file"

func tooLarge(lim Limits) error {
	return fault.TooLargef("the file exceeds %d bytes", lim.MaxBytes)
}

// Invalid is the invalid-input fault of a file rejected as a whole.
func Invalid(message string) *fault.Error {
	return fault.Invalid(FileField, message)
}

// Attachment sets the headers of a CSV download named name (attachment;
// filename="…", always quoted; name must hold no quote or backslash).
// Exports hold personal data, so no cache keeps a copy.
func Attachment(w http.ResponseWriter, name string) {
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
}

// HelpLink is the Link header of an import template download: the API
// documentation, which explains recognised labels and the mapping and
// dry_run form fields (docs/import.md in the repository).
const HelpLink = `</docs>; rel="help"`

// Template writes an import template download: the header line, with a
// link to the import's documentation.
func Template(w http.ResponseWriter, name string, header []string) {
	Attachment(w, name)
	w.Header().Set("Link", HelpLink)
	cw := NewWriter(w)
	if err := cw.WriteHeader(header); err == nil {
		_ = cw.Flush()
	}
}

// Escape neutralises a cell a spreadsheet would run as a formula.
func Escape(cell string) string {
	if cell == "" {
		return cell
	}
	switch cell[0] {
	case '=', '+', '-', '@', ';', '\t', '\r':
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
