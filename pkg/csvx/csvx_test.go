package csvx_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/opencrm/crm/pkg/csvx"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/problem"
)

var cols = []csvx.Column{
	{Name: "first_name", Aliases: []string{"First", "Given Name"}, Required: true},
	{Name: "last_name", Aliases: []string{"Surname"}, Required: true},
	{Name: "email", Aliases: []string{"E-mail Address"}},
	{Name: "notes"},
}

type row struct {
	Row                           int
	First, Last, Email, NotesCell string
}

func readAll(t *testing.T, in string, lim csvx.Limits) ([]row, error) {
	t.Helper()
	r, err := csvx.NewReader(strings.NewReader(in), cols, lim)
	if err != nil {
		return nil, err
	}
	var out []row
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, row{rec.Row, rec.Get("first_name"), rec.Get("last_name"), rec.Get("email"), rec.Get("notes")})
	}
}

func TestReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []row
	}{
		{"plain", "first_name,last_name,email\nAda,Lovelace,ada@x.io\n",
			[]row{{2, "Ada", "Lovelace", "ada@x.io", ""}}},
		{"bom, aliases and case", "\xEF\xBB\xBFFIRST NAME,Surname,E-Mail,Extra\r\nAda,Lovelace,a@x.io,zzz\r\n",
			[]row{{2, "Ada", "Lovelace", "a@x.io", ""}}},
		{"semicolon", "First;Last Name;email\nAda;Lovelace;a@x.io\nAlan;Turing;\n",
			[]row{{2, "Ada", "Lovelace", "a@x.io", ""}, {3, "Alan", "Turing", "", ""}}},
		{"quoted multi-line cell keeps spreadsheet rows", "first_name,last_name,notes\nA,B,\"line1\nline2, \"\"q\"\"\"\nC,D,x\n",
			[]row{{2, "A", "B", "", "line1\nline2, \"q\""}, {3, "C", "D", "", "x"}}},
		{"short row", "first_name,last_name,email\nA\n",
			[]row{{2, "A", "", "", ""}}},
		{"header only", "first_name,last_name\n", nil},
		{"semicolons inside quotes do not decide", "\"a;b;c\",first_name,last_name\nx,A,B\n",
			[]row{{2, "A", "B", "", ""}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := readAll(t, tc.in, csvx.Limits{})
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !reflect.DeepEqual(tc.want, got) {
				t.Errorf("rows (-want +got):\n- %+v\n+ %+v", tc.want, got)
			}
		})
	}
}

func TestReaderRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     string
		lim    csvx.Limits
		status int
		detail string
	}{
		{"empty", "", csvx.Limits{}, 422, "the file is empty"},
		{"blank", "\xEF\xBB\xBF \n\n", csvx.Limits{}, 422, "the file is empty"},
		{"binary", "PK\x03\x04\x00\x00binary", csvx.Limits{}, 422, "the file is not a CSV text file"},
		{"neither utf8 nor windows-1252", "first_name,last_name\n\x81\x8d,x\n", csvx.Limits{}, 422, "the file is neither UTF-8 nor Windows-1252 text"},
		{"utf-16 without bom", "f\x00i\x00r\x00s\x00t\x00", csvx.Limits{}, 422, "the file is not a CSV text file"},
		{"pdf", "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", csvx.Limits{}, 422, "the file is not a CSV text file"},
		{"missing required", "first_name,email\nA,a@x.io\n", csvx.Limits{}, 422, "the header is missing the required column(s): last_name"},
		{"unclosed quote", "first_name,last_name\nA,\"B\nC,D\n", csvx.Limits{}, 422, "Row 2: a quoted cell is not closed (or has a stray quote) starting at line 2"},
		{"bare quote", "first_name,last_name\nA,B\"x\n", csvx.Limits{}, 422, "Row 2: a quote appears inside an unquoted cell at line 2"},
		{"nul", "first_name,last_name\nA\x00,B\n", csvx.Limits{}, 422, "the file is not a CSV text file"},
		{"nul beyond sniff", "first_name,last_name\n" + strings.Repeat("A,B\n", 17000) + "A\x00,B\n", csvx.Limits{}, 422, "Row 17002: the file holds a NUL character (it is not a text CSV)"},
		{"too many rows", "first_name,last_name\nA,B\nC,D\nE,F\n", csvx.Limits{MaxRows: 2}, 413, "the file holds more than 2 rows"},
		{"too many bytes", "first_name,last_name\n" + strings.Repeat("A,B\n", 100), csvx.Limits{MaxBytes: 50}, 413, "the file exceeds 50 bytes"},
		{"too many bytes beyond sniff", "first_name,last_name\n" + strings.Repeat("Abcdefgh,Bcdefghi\n", 10000), csvx.Limits{MaxBytes: 100_000}, 413, "the file exceeds 100000 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := readAll(t, tc.in, tc.lim)
			p, ok := rendered(err)
			if !ok {
				t.Fatalf("want a fault, got %v", err)
			}
			if p.Status != tc.status || p.Detail != tc.detail && (len(p.Errors) == 0 || p.Errors[0].Message != tc.detail) {
				t.Errorf("got %d %q %+v, want %d %q", p.Status, p.Detail, p.Errors, tc.status, tc.detail)
			}
			if tc.status == 422 && (len(p.Errors) != 1 || p.Errors[0].Field != "file") {
				t.Errorf("want one error on field file, got %+v", p.Errors)
			}
		})
	}
}

func TestRowsAtLimitAccepted(t *testing.T) {
	t.Parallel()
	in := "first_name,last_name\nA,B\nC,D\n"
	got, err := readAll(t, in, csvx.Limits{MaxRows: 2, MaxBytes: int64(len(in))})
	if err != nil || len(got) != 2 {
		t.Fatalf("got %v %v", got, err)
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"E-mail": "email", " First Name ": "firstname", "first_name": "firstname", "Ünïcode Nom": "ünïcodenom"} {
		if got := csvx.Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWriterEscapesAndFlushes(t *testing.T) {
	t.Parallel()
	var buf flushBuffer
	w := csvx.NewWriter(&buf)
	w.FlushEvery = 2
	if err := w.WriteHeader([]string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	rows := [][]string{{"=1+1", "+x"}, {"-2", "@SUM(A1)"}, {"\tx", "\rx"}, {"ok, \"q\"", "multi\nline"}, {";=1+1", "a;b"}}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if buf.flushes != 2 {
		t.Errorf("flushes = %d, want 2", buf.flushes)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "a,b\n'=1+1,'+x\n'-2,'@SUM(A1)\n'\tx,\"'\rx\"\n\"ok, \"\"q\"\"\",\"multi\nline\"\n';=1+1,a;b\n"
	if got := buf.String(); got != want {
		t.Errorf("output (-want +got):\n- %q\n+ %q", want, got)
	}
}

type flushBuffer struct {
	bytes.Buffer
	flushes int
}

func (f *flushBuffer) Flush() { f.flushes++ }

var _ http.Flusher = (*flushBuffer)(nil)

// FuzzReader feeds arbitrary bytes to the reader: it must never panic,
// every failure must be a 413 or 422 problem, and rows must count up from 2.
// The seed corpus runs in every plain `go test`.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"first_name,last_name\nA,B\n",
		"\xEF\xBB\xBFfirst name;surname\n\"x;y\";\"multi\nline\"\n",
		"first_name,last_name\nA,\"B\n",
		"first_name,last_name\nA,B\"\n",
		"",
		"\x00\x01",
		"first,last\n,,,,\n\n\nA,B",
		"first_name,last_name,first_name\r\nA,B,C\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := csvx.NewReader(bytes.NewReader(in), cols, csvx.Limits{MaxBytes: 1 << 16, MaxRows: 50})
		if err != nil {
			checkProblem(t, err)
			return
		}
		want := 2
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				checkProblem(t, err)
				return
			}
			if rec.Row != want {
				t.Fatalf("row %d, want %d", rec.Row, want)
			}
			want++
			_ = rec.Get("first_name") + rec.Get("email") + rec.Get("nope")
		}
	})
}

// FuzzWriterRoundTrip checks that whatever a Writer writes reads back as
// the escaped cells.
func FuzzWriterRoundTrip(f *testing.F) {
	f.Add("=cmd|' /C calc'!A0", "plain", "multi\nline \"q\"")
	f.Add("", "-1", "@x")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		if !utf8.ValidString(a + b + c) {
			// Cells are UTF-8 text (the API refuses anything else), and a
			// file that is not UTF-8 reads back as Windows-1252.
			return
		}
		var buf bytes.Buffer
		w := csvx.NewWriter(&buf)
		_ = w.WriteHeader([]string{"first_name", "last_name", "notes"})
		if err := w.Write([]string{a, b, c}); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		r, err := csvx.NewReader(&buf, cols, csvx.Limits{})
		if err != nil {
			return // e.g. not UTF-8 input: the reader rightly refuses it
		}
		rec, err := r.Next()
		if err != nil {
			return
		}
		got := []string{rec.Get("first_name"), rec.Get("last_name"), rec.Get("notes")}
		for i, in := range []string{a, b, c} {
			esc := csvx.Escape(in)
			// encoding/csv turns \r\n inside quoted cells into \n.
			esc = strings.ReplaceAll(esc, "\r\n", "\n")
			if strings.ContainsRune(esc, '\r') || strings.TrimSpace(esc) != esc {
				continue
			}
			if got[i] != esc {
				t.Fatalf("cell %d: got %q want %q", i, got[i], esc)
			}
			if len(got[i]) > 0 && strings.ContainsRune("=+-@;\t\r", rune(got[i][0])) {
				t.Fatalf("cell %d starts with a formula character: %q", i, got[i])
			}
		}
	})
}

func checkProblem(t *testing.T, err error) {
	t.Helper()
	p, ok := rendered(err)
	if !ok || (p.Status != 413 && p.Status != 422) {
		t.Fatalf("want a 413/422 fault, got %v", err)
	}
	if p.Status == 422 && (len(p.Errors) != 1 || p.Errors[0].Field != "file") {
		t.Fatalf("422 without file field: %s", fmt.Sprint(p.Errors))
	}
}

// TestUploadCutShort: a body that fails under the reader (a truncated
// multipart upload) rejects the file with a 422, not a 500.
func TestUploadCutShort(t *testing.T) {
	t.Parallel()
	body := io.MultiReader(strings.NewReader("first_name,last_name\n"+strings.Repeat("A,B\n", 17000)),
		iotestErrReader{io.ErrUnexpectedEOF})
	r, err := csvx.NewReader(body, cols, csvx.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = r.Next()
	}
	p := problem.From(err)
	want := []problem.FieldError{{Field: "file", Message: "the upload cannot be read: it ended early or is malformed"}}
	if p.Status != 422 || !reflect.DeepEqual(p.Errors, want) {
		t.Fatalf("got %d %+v, want 422 %+v", p.Status, p.Errors, want)
	}
}

// rendered is err as an edge renders it, when err is a fault: csvx's
// errors carry no status, problem.FromFault is the one mapping to one.
func rendered(err error) (*problem.Error, bool) {
	var f *fault.Error
	if !errors.As(err, &f) {
		return nil, false
	}
	return problem.FromFault(f), true
}

type iotestErrReader struct{ err error }

func (r iotestErrReader) Read([]byte) (int, error) { return 0, r.err }
