package csvx

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
)

// An export of a million rows spent most of its time in per-row Go work
// (decoding rows, formatting cells, encoding/csv) that PostgreSQL's COPY
// does in C. Copy lets PostgreSQL write the CSV and only fixes up, in
// one pass over each row's bytes, the few places where COPY's CSV and
// Writer's differ, so the download is byte for byte what Writer writes:
//
//   - a cell starting with = + - @ ; tab or CR gets Escape's apostrophe;
//   - an empty string, which COPY quotes (""), is an empty cell;
//   - a cell starting with white space (unicode.IsSpace) or reading \. is
//     quoted, as encoding/csv quotes them and COPY does not.
//
// COPY quotes every other cell exactly when encoding/csv does (a comma,
// quote, CR or LF inside) and doubles quotes the same way, and NULL is an
// empty unquoted cell.

// copyFlushBytes is how much CSV CopyWriter collects before writing it to
// its destination and flushing that.
const copyFlushBytes = 64 << 10

// CopyWriter receives the rows of COPY … TO STDOUT (FORMAT csv) (no
// HEADER), one row per Write, as pgconn's CopyTo hands each CopyData
// message over (PostgreSQL sends one per row), and writes the CSV
// Writer.Write would write for the same cells.
type CopyWriter struct {
	out *bufio.Writer
	dst io.Writer
}

// NewCopyWriter writes to dst, flushing it (http.Flusher, or a Flush()
// error method) whenever it has written a buffer's worth, so an HTTP
// export streams in constant memory.
func NewCopyWriter(dst io.Writer) *CopyWriter {
	w := &CopyWriter{dst: dst}
	w.out = bufio.NewWriterSize(flushingWriter{dst}, copyFlushBytes)
	return w
}

// flushingWriter flushes its destination after every write: CopyWriter's
// buffer writes to it only when full.
type flushingWriter struct{ dst io.Writer }

func (f flushingWriter) Write(p []byte) (int, error) {
	n, err := f.dst.Write(p)
	if err != nil {
		return n, err
	}
	return n, flushDst(f.dst)
}

func flushDst(dst io.Writer) error {
	switch f := dst.(type) {
	case interface{ Flush() error }:
		return f.Flush()
	case http.Flusher:
		f.Flush()
	}
	return nil
}

// errRow is a CopyData message that is not one whole CSV row.
var errRow = errors.New("csvx: a COPY row does not end in a line feed")

// Write rewrites one row (its cells, comma-separated, and its LF).
func (w *CopyWriter) Write(row []byte) (int, error) {
	n := len(row)
	if n == 0 || row[n-1] != '\n' {
		return 0, errRow
	}
	end := n - 1
	last := 0 // row[:last] is written
	for i := 0; ; {
		// i is the start of a cell.
		var next int // index of the comma or LF after the cell
		if i < end && row[i] == '"' {
			j := i + 1
			for {
				k := bytes.IndexByte(row[j:end], '"')
				if k < 0 {
					return 0, errRow
				}
				j += k
				if j+1 < end && row[j+1] == '"' {
					j += 2
					continue
				}
				break
			}
			next = j + 1
			switch {
			case j == i+1: // "": an empty string, an empty cell
				w.out.Write(row[last:i])
				last = next
			case escaped(row[i+1]):
				w.out.Write(row[last : i+1])
				w.out.WriteByte('\'')
				last = i + 1
			}
		} else {
			k := bytes.IndexByte(row[i:end], ',')
			if k < 0 {
				next = end
			} else {
				next = i + k
			}
			if cell := row[i:next]; len(cell) > 0 {
				switch {
				case escaped(cell[0]):
					w.out.Write(row[last:i])
					w.out.WriteByte('\'')
					last = i
				case leadingSpace(cell) || string(cell) == `\.`:
					w.out.Write(row[last:i])
					w.out.WriteByte('"')
					w.out.Write(cell)
					w.out.WriteByte('"')
					last = next
				}
			}
		}
		if next >= end {
			break
		}
		if row[next] != ',' {
			return 0, errRow
		}
		i = next + 1
	}
	if _, err := w.out.Write(row[last:]); err != nil {
		return 0, err
	}
	return n, nil
}

// escaped reports whether a cell starting with b gets Escape's apostrophe.
func escaped(b byte) bool {
	switch b {
	case '=', '+', '-', '@', ';', '\t', '\r':
		return true
	}
	return false
}

// leadingSpace reports whether encoding/csv quotes cell for its first
// rune (white space: tab, CR and LF never reach here unquoted).
func leadingSpace(cell []byte) bool {
	if b := cell[0]; b < utf8.RuneSelf {
		return b == ' ' || b == '\v' || b == '\f'
	}
	r, _ := utf8.DecodeRune(cell)
	return unicode.IsSpace(r)
}

// Flush writes what is buffered and flushes the destination.
func (w *CopyWriter) Flush() error {
	if err := w.out.Flush(); err != nil {
		return err
	}
	return flushDst(w.dst)
}

// Copy runs query (a SELECT whose placeholders $1… take args) as
// COPY (query) TO STDOUT (FORMAT csv) on conn and writes its rows through
// a CopyWriter to dst: PostgreSQL formats the cells, so a row costs no
// decoding or formatting in Go. The caller writes the header line first.
//
// COPY takes no bind parameters, so each placeholder is replaced by the
// argument as a literal (Inline).
func Copy(ctx context.Context, conn *pgconn.PgConn, dst io.Writer, query string, args []any) error {
	if conn.ParameterStatus("standard_conforming_strings") != "on" {
		// Backslashes would be escapes in '…': Inline's quoting relies on
		// the default.
		return errors.New("csvx: COPY needs standard_conforming_strings on")
	}
	sql, err := Inline(query, args)
	if err != nil {
		return err
	}
	cw := NewCopyWriter(dst)
	if _, err := conn.CopyTo(ctx, cw, `COPY (`+sql+`) TO STDOUT (FORMAT csv)`); err != nil {
		return err
	}
	return cw.Flush()
}

// placeholder is a $n parameter; listsql and the stores' queries write
// no $ anywhere else (no dollar quoting, no $ in their literals).
var placeholder = regexp.MustCompile(`\$[0-9]+`)

// Inline replaces each $n of query by args[n-1] as an SQL literal, typed
// as the extended protocol would have sent it: a string as an untyped
// '…' literal (quotes doubled; standard_conforming_strings on), whose
// type PostgreSQL infers from its place as it does a parameter's; an
// integer as a number, a bool as true/false, a time as a timestamptz, a
// []string or []int64 as a typed array. Any other type, a string holding
// a NUL byte, or a placeholder without its argument is an error rather
// than a guess. The literals are constants to the planner, as an unnamed
// statement's parameters are (the stores' list queries plan with the
// values).
func Inline(query string, args []any) (string, error) {
	lits := make([]string, len(args))
	for i, a := range args {
		l, err := literal(a)
		if err != nil {
			return "", fmt.Errorf("csvx: argument $%d: %w", i+1, err)
		}
		lits[i] = l
	}
	var bad error
	out := placeholder.ReplaceAllStringFunc(query, func(p string) string {
		n, err := strconv.Atoi(p[1:])
		if err != nil || n < 1 || n > len(lits) {
			bad = fmt.Errorf("csvx: %s has no argument", p)
			return p
		}
		return lits[n-1]
	})
	return out, bad
}

func literal(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return quote(x)
	case int:
		return number(int64(x)), nil
	case int32:
		return number(int64(x)), nil
	case int64:
		return number(x), nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	case time.Time:
		return "'" + x.UTC().Format("2006-01-02T15:04:05.999999999Z") + "'::timestamptz", nil
	case []string:
		parts := make([]string, len(x))
		for i, s := range x {
			q, err := quote(s)
			if err != nil {
				return "", err
			}
			parts[i] = q
		}
		return "ARRAY[" + strings.Join(parts, ",") + "]::text[]", nil
	case []int64:
		parts := make([]string, len(x))
		for i, n := range x {
			parts[i] = number(n)
		}
		return "ARRAY[" + strings.Join(parts, ",") + "]::bigint[]", nil
	}
	return "", fmt.Errorf("a %T cannot be written as a literal", v)
}

// number is n in parentheses when negative, so "- -1" never reads as a
// comment start ("--").
func number(n int64) string {
	if n < 0 {
		return "(" + strconv.FormatInt(n, 10) + ")"
	}
	return strconv.FormatInt(n, 10)
}

// quote is s as a standard-conforming string literal.
func quote(s string) (string, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return "", errors.New("a string holds a NUL byte")
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'", nil
}

// CellSQL is the SQL of a custom field's cell as customfield.Cell writes
// it, for a query Copy runs: the value under key in the jsonb column
// (a text, number or boolean as its text, a list as its elements joined
// by commas), NULL when absent. column is a trusted identifier; key is
// quoted.
func CellSQL(column, key string) (string, error) {
	k, err := quote(key)
	if err != nil {
		return "", err
	}
	v := column + " -> " + k
	return `CASE jsonb_typeof(` + v + `) WHEN 'array' THEN (SELECT string_agg(e, ',') FROM jsonb_array_elements_text(` + v +
		`) e) ELSE ` + column + ` ->> ` + k + ` END`, nil
}

// TimeSQL is the SQL of a timestamptz column's cell in the platform's
// timestamp layout (pkg/timestamp: UTC, six fractional digits).
func TimeSQL(column string) string {
	return `to_char(` + column + ` AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
}

// Download is an export's response body. Its headers (Attachment) and its
// header line go out with the first bytes written, so an error before any
// row can still be answered as a problem; Start sends them for an export
// without rows.
type Download struct {
	w       http.ResponseWriter
	name    string
	header  []string
	started bool
}

// NewDownload answers a CSV file called name whose header line is header
// (trusted column names, written verbatim as WriteHeader does).
func NewDownload(w http.ResponseWriter, name string, header []string) *Download {
	return &Download{w: w, name: name, header: header}
}

// Started reports whether the response has begun.
func (d *Download) Started() bool { return d.started }

// Start sends the headers and the header line (once).
func (d *Download) Start() error {
	if d.started {
		return nil
	}
	d.started = true
	Attachment(d.w, d.name)
	cw := csv.NewWriter(d.w)
	if err := cw.Write(d.header); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// Write starts the download, then writes p.
func (d *Download) Write(p []byte) (int, error) {
	if err := d.Start(); err != nil {
		return 0, err
	}
	return d.w.Write(p)
}

// Flush flushes the response once it has started: a flush before the
// first row (a writer flushing an export without rows) would send the
// status without the download's headers.
func (d *Download) Flush() {
	if !d.started {
		return
	}
	if f, ok := d.w.(http.Flusher); ok {
		f.Flush()
	}
}
