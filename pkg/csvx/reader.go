package csvx

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/opencrm/crm/pkg/fault"
)

// Limits bound what a reader accepts; zero means unlimited.
type Limits struct {
	// MaxBytes caps the bytes read from the source, BOM included.
	MaxBytes int64
	// MaxRows caps the data rows (the header is not counted).
	MaxRows int
}

// Column is one column a caller understands.
type Column struct {
	// Name is the canonical name; Record.Get and Options.Mapping take it.
	Name string
	// Labels is the key of the label table (labels.go) whose labels mean
	// this column; "" uses Name as the key.
	Labels string
	// Aliases are further header spellings, after the table's.
	Aliases []string
	// Required columns must appear in the header (their cells may still be
	// empty on a row; that is a row-level rule of the caller).
	Required bool
}

// FullName names the columns a single full-name column is split into.
type FullName struct {
	First, Last string
}

// FullNameField is the mapping target of a full-name column.
const FullNameField = KeyFullName

// Options configure Open.
type Options struct {
	Limits
	// Mapping overrides recognition: header label → column name, "" to
	// ignore the column (see ParseMapping). Labels compare as Normalize.
	Mapping map[string]string
	// FullName, when set, splits one full-name column ("Name", "Full
	// Name", "Person - Name") at its first space into First and Last when
	// the header holds neither of them.
	FullName *FullName
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

// layout is how a header maps onto columns.
type layout struct {
	index   map[string]int
	split   int // the full-name cell, -1 when none is split
	first   string
	last    string
	ignored []string
}

// Record is one data row.
type Record struct {
	// Row is the spreadsheet row number: the header is row 1, the first
	// data record row 2. A quoted cell spanning lines is still one row.
	Row    int
	fields []string
	l      *layout
}

// Get returns the cell of the named column, "" when the column is not in
// the file or the row is short.
func (r Record) Get(name string) string {
	if r.l == nil {
		return ""
	}
	if r.l.split >= 0 && (name == r.l.first || name == r.l.last) {
		first, last := SplitName(r.cell(r.l.split))
		if name == r.l.first {
			return first
		}
		return last
	}
	i, ok := r.l.index[name]
	if !ok {
		return ""
	}
	return r.cell(i)
}

func (r Record) cell(i int) string {
	if i >= len(r.fields) {
		return ""
	}
	return r.fields[i]
}

// SplitName splits a full name at its first space: "Mary Ann Smith" is
// "Mary" and "Ann Smith"; a single word is a first name only.
func SplitName(full string) (first, last string) {
	full = strings.TrimSpace(full)
	first, last, _ = strings.Cut(full, " ")
	return first, strings.TrimSpace(last)
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

// Report is what a reader decided about a file, for the import answer.
type Report struct {
	// Encoding is the detected encoding (EncUTF8, EncUTF8BOM, EncUTF16LE,
	// EncUTF16BE, EncWindows1252).
	Encoding string `json:"encoding"`
	// Delimiter is ",", ";" or "\t".
	Delimiter string `json:"delimiter"`
	// IgnoredColumns are the header labels no column reads, in file order.
	IgnoredColumns []string `json:"ignored_columns"`
}

// Reader reads records of a CSV file with a matched header.
type Reader struct {
	cr    *csv.Reader
	lim   Limits
	l     *layout
	row   int
	comma rune
	enc   func() string
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

// sniffSize is how much of the file decides its encoding, its delimiter
// and whether it is text at all.
const sniffSize = 64 << 10

// NewReader is Open with limits only.
func NewReader(src io.Reader, cols []Column, lim Limits) (*Reader, error) {
	return Open(src, cols, Options{Limits: lim})
}

// Open detects the file's encoding and delimiter, reads its header and
// matches it to cols. See the package documentation.
func Open(src io.Reader, cols []Column, opt Options) (*Reader, error) {
	lr := &limitReader{r: src, max: opt.MaxBytes}
	d, err := decode(lr)
	if err != nil {
		var f *fault.Error
		switch {
		case errors.As(err, &f):
			return nil, err
		case errors.Is(err, errTooLarge):
			return nil, tooLarge(opt.Limits)
		}
		return nil, (&Reader{lim: opt.Limits}).mapErr(err)
	}
	if len(strings.TrimSpace(string(d.head))) == 0 {
		if lr.max > 0 && lr.n > lr.max {
			return nil, tooLarge(opt.Limits)
		}
		return nil, Invalid("the file is empty")
	}
	r := &Reader{lim: opt.Limits, comma: Delimiter(d.head), enc: d.enc}
	r.cr = csv.NewReader(d.r)
	r.cr.Comma = r.comma
	r.cr.FieldsPerRecord = -1
	header, err := r.cr.Read()
	if err != nil {
		return nil, r.mapErr(err)
	}
	r.row = 1
	if r.l, err = match(header, cols, opt); err != nil {
		return nil, err
	}
	return r, nil
}

// Delimiter picks, from the first line outside quotes, the most frequent
// of tab (Excel's "Unicode Text"), semicolon (spreadsheets in
// comma-decimal locales) and comma; comma on a tie or none.
func Delimiter(head []byte) rune {
	commas, semis, tabs := 0, 0, 0
	inQuote := false
	for _, b := range head {
		if b == '\n' && !inQuote {
			break
		}
		switch {
		case b == '"':
			inQuote = !inQuote
		case inQuote:
		case b == ',':
			commas++
		case b == ';':
			semis++
		case b == '\t':
			tabs++
		}
	}
	switch {
	case tabs > commas && tabs > semis:
		return '\t'
	case semis > commas:
		return ';'
	}
	return ','
}

// Columns reports which canonical columns the file provides, a split
// full name included.
func (r *Reader) Columns() []string {
	out := make([]string, 0, len(r.l.index)+2)
	for name := range r.l.index {
		out = append(out, name)
	}
	if r.l.split >= 0 {
		out = append(out, r.l.first, r.l.last)
	}
	return out
}

// Has reports whether the file provides the named column.
func (r *Reader) Has(name string) bool {
	if r.l.split >= 0 && (name == r.l.first || name == r.l.last) {
		return true
	}
	_, ok := r.l.index[name]
	return ok
}

// Comma is the detected delimiter.
func (r *Reader) Comma() rune { return r.comma }

// Report says how the file was read. The encoding of a file that starts
// with a long ASCII stretch is final once the file was read.
func (r *Reader) Report() Report {
	ignored := r.l.ignored
	if ignored == nil {
		ignored = []string{}
	}
	return Report{Encoding: r.enc(), Delimiter: string(r.comma), IgnoredColumns: ignored}
}

// Next returns the next record, io.EOF at the end, or a fault that
// rejects the file.
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
		return Record{}, fault.TooLargef("the file holds more than %d rows", r.lim.MaxRows)
	}
	for _, f := range fields {
		if !utf8.ValidString(f) {
			return Record{}, Invalid(fmt.Sprintf("Row %d: the file is not UTF-8 text", r.row))
		}
		if strings.IndexByte(f, 0) >= 0 {
			return Record{}, Invalid(fmt.Sprintf("Row %d: the file holds a NUL character (it is not a text CSV)", r.row))
		}
	}
	return Record{Row: r.row, fields: fields, l: r.l}, nil
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
