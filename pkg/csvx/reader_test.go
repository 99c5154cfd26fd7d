package csvx_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"

	"github.com/opencrm/crm/pkg/csvx"
	"github.com/opencrm/crm/pkg/problem"
)

// people are the columns of a contact-like import.
var people = []csvx.Column{
	{Name: "first_name", Labels: csvx.KeyFirstName, Required: true},
	{Name: "last_name", Labels: csvx.KeyLastName, Required: true},
	{Name: "email", Labels: csvx.KeyEmail},
	{Name: "phone", Labels: csvx.KeyPhone},
	{Name: "mobile", Labels: csvx.KeyMobile},
	{Name: "job_title", Labels: csvx.KeyJobTitle},
	{Name: "company_name", Labels: csvx.KeyCompany},
	{Name: "address_city", Labels: csvx.KeyCity},
	{Name: "status", Labels: csvx.KeyContactStatus},
}

var split = &csvx.FullName{First: "first_name", Last: "last_name"}

type read struct {
	Report csvx.Report
	Rows   [][]string // first_name, last_name, email, city per row
}

func readPeople(t *testing.T, in []byte, opt csvx.Options) (read, error) {
	t.Helper()
	r, err := csvx.Open(bytes.NewReader(in), people, opt)
	if err != nil {
		return read{}, err
	}
	var out read
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return read{}, err
		}
		out.Rows = append(out.Rows, []string{rec.Get("first_name"), rec.Get("last_name"), rec.Get("email"), rec.Get("address_city")})
	}
	out.Report = r.Report()
	return out, nil
}

func utf16(t *testing.T, order unicode.Endianness, s string) []byte {
	t.Helper()
	b, err := unicode.UTF16(order, unicode.UseBOM).NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func win1252(t *testing.T, s string) []byte {
	t.Helper()
	b, err := charmap.Windows1252.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEncodings: what Excel and address books save reads as the same text,
// and the report names the encoding and delimiter.
func TestEncodings(t *testing.T) {
	t.Parallel()
	const text = "First Name,Last Name,E-mail Address,City\r\nJosé,Müller,jm@x.io,Köln €\r\n"
	const tabs = "First Name\tLast Name\tE-mail Address\tCity\r\nJosé\tMüller\tjm@x.io\tKöln €\r\n"
	// An ASCII stretch longer than the sniffed window before the first
	// Windows-1252 byte.
	long := "First Name,Last Name,E-mail Address,City\r\n" + strings.Repeat("Ann,Lee,,Oslo\r\n", 6000) + "José,Müller,jm@x.io,Köln €\r\n"
	want := []string{"José", "Müller", "jm@x.io", "Köln €"}
	for _, tc := range []struct {
		name  string
		in    []byte
		enc   string
		delim string
	}{
		{"utf-8", []byte(text), csvx.EncUTF8, ","},
		{"utf-8 with bom", append([]byte("\xEF\xBB\xBF"), text...), csvx.EncUTF8BOM, ","},
		{"utf-16le with bom, tabs (Excel Unicode Text)", utf16(t, unicode.LittleEndian, tabs), csvx.EncUTF16LE, "\t"},
		{"utf-16be with bom", utf16(t, unicode.BigEndian, text), csvx.EncUTF16BE, ","},
		{"windows-1252 (Excel CSV)", win1252(t, text), csvx.EncWindows1252, ","},
		{"windows-1252 semicolons", win1252(t, strings.ReplaceAll(text, ",", ";")), csvx.EncWindows1252, ";"},
		{"windows-1252 after 64 KB of ASCII", win1252(t, long), csvx.EncWindows1252, ","},
		{"utf-8 after 64 KB of ASCII", []byte(long), csvx.EncUTF8, ","},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := readPeople(t, tc.in, csvx.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got.Rows[len(got.Rows)-1]); diff != "" {
				t.Errorf("last row (-want +got):\n%s", diff)
			}
			wantRep := csvx.Report{Encoding: tc.enc, Delimiter: tc.delim, IgnoredColumns: []string{}}
			if diff := cmp.Diff(wantRep, got.Report); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecognition(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		in      string
		opt     csvx.Options
		rows    [][]string
		ignored []string
	}{
		{"outlook: Job Title beats Title, Business City beats Home City",
			"Title,First Name,Last Name,Job Title,Business City,Home City,E-mail Address,Categories\r\nDr.,Ada,Lovelace,Engineer,London,Bath,ada@x.io,VIP\r\n",
			csvx.Options{}, [][]string{{"Ada", "Lovelace", "ada@x.io", "London"}}, []string{"Title", "Home City", "Categories"}},
		{"full name split at the first space",
			"Name,Email\r\nMary Ann Smith,m@x.io\r\nCher,c@x.io\r\n",
			csvx.Options{FullName: split}, [][]string{{"Mary", "Ann Smith", "m@x.io", ""}, {"Cher", "", "c@x.io", ""}}, []string{}},
		{"full name beside first and last is ignored",
			"Full Name,First Name,Last Name\r\nA B,A,B\r\n",
			csvx.Options{FullName: split}, [][]string{{"A", "B", "", ""}}, []string{"Full Name"}},
		{"mapping overrides recognition and ignores",
			`"Vorname","Nachname","Ort","City","E-mail"` + "\r\nJo,Bo,Wien,Paris,j@x.io\r\n",
			csvx.Options{Mapping: map[string]string{"Vorname": "first_name", "nachname": "last_name", "Ort": "address_city", "E-mail": ""}},
			[][]string{{"Jo", "Bo", "", "Wien"}}, []string{"City", "E-mail"}},
		{"mapping to full_name",
			"Kontakt,Mail\r\nJo Bo,j@x.io\r\n",
			csvx.Options{FullName: split, Mapping: map[string]string{"Kontakt": "full_name", "Mail": "email"}},
			[][]string{{"Jo", "Bo", "j@x.io", ""}}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := readPeople(t, []byte(tc.in), tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.rows, got.Rows); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.ignored, got.Report.IgnoredColumns); diff != "" {
				t.Errorf("ignored (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMappingRejects(t *testing.T) {
	t.Parallel()
	const file = "First Name,Last Name,Vorname,Email\nA,B,C,d@x.io\n"
	for _, tc := range []struct {
		name, mapping, msg string
	}{
		{"not json", `{"First Name":`, `must be a JSON object from column label to field name, e.g. {"Mailing City":"address_city","Fax":""}`},
		{"not an object", `["first_name"]`, `must be a JSON object from column label to field name, e.g. {"Mailing City":"address_city","Fax":""}`},
		{"unknown field", `{"Vorname":"given"}`, `column "Vorname" maps to "given", which is not a field (fields: address_city, company_name, email, first_name, full_name, job_title, last_name, mobile, phone, status)`},
		{"two columns to one field", `{"First Name":"first_name","Vorname":"first_name"}`, `columns "First Name" and "Vorname" both map to field "first_name"`},
		{"column not in the file", `{"Nachname":"last_name"}`, `column "Nachname" is not in the file's header`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := csvx.ParseMapping(tc.mapping)
			if err == nil {
				_, err = csvx.Open(strings.NewReader(file), people, csvx.Options{Mapping: m, FullName: split})
			}
			want := []problem.FieldError{{Field: "mapping", Message: tc.msg}}
			p := problem.From(err)
			if p.Status != 422 {
				t.Fatalf("status %d, want 422 (%v)", p.Status, err)
			}
			if diff := cmp.Diff(want, p.Errors); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLabelsBelongToOneField: a label (as Normalize folds it) names one
// field only, or recognition would depend on map order. The two status
// keys are alternatives (a context uses one of them).
func TestLabelsBelongToOneField(t *testing.T) {
	t.Parallel()
	owner := map[string]string{}
	for _, key := range csvx.LabelKeys() {
		if key == csvx.KeyContactStatus {
			continue
		}
		for _, l := range append(csvx.Labels(key), key) {
			n := csvx.Normalize(l)
			if other, ok := owner[n]; ok && other != key {
				t.Errorf("label %q is in %s and %s", l, other, key)
			}
			owner[n] = key
		}
	}
}

// FuzzOpen runs the decoder and the header recogniser over arbitrary
// bytes and mappings: no panic, every failure a 413/422 problem, every
// cell valid UTF-8, every ignored label a header cell. The committed
// corpus under testdata/fuzz/FuzzOpen runs in every plain `go test`.
func FuzzOpen(f *testing.F) {
	f.Add([]byte("First Name,Last Name\r\nA,B\r\n"), "")
	f.Add([]byte("\xFF\xFEN\x00a\x00m\x00e\x00\n\x00"), `{"Name":"full_name"}`)
	f.Add([]byte("Name;Ort\nJos\xe9 M,K\xf6ln\n"), `{"Ort":"address_city"}`)
	f.Add([]byte("\xEF\xBB\xBFTitle\tJob Title\tName\n"), `{"Title":""}`)
	f.Fuzz(func(t *testing.T, in []byte, mapping string) {
		m, err := csvx.ParseMapping(mapping)
		if err != nil {
			checkProblem422(t, err, "mapping")
			return
		}
		r, err := csvx.Open(bytes.NewReader(in), people, csvx.Options{Limits: csvx.Limits{MaxBytes: 1 << 16, MaxRows: 20}, Mapping: m, FullName: split})
		if err != nil {
			checkProblem422(t, err, "")
			return
		}
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				checkProblem422(t, err, "")
				return
			}
			for _, c := range []string{"first_name", "last_name", "email", "status"} {
				if v := rec.Get(c); !utf8.ValidString(v) {
					t.Fatalf("%s not UTF-8: %q", c, v)
				}
			}
		}
		rep := r.Report()
		if rep.Encoding == "" || len(rep.Delimiter) != 1 {
			t.Fatalf("report %+v", rep)
		}
	})
}

func checkProblem422(t *testing.T, err error, field string) {
	t.Helper()
	p, ok := rendered(err)
	if !ok || (p.Status != 413 && p.Status != 422) {
		t.Fatalf("want a 413/422 fault, got %v", err)
	}
	if p.Status == 422 && len(p.Errors) != 1 {
		t.Fatalf("422 without one field error: %+v", p.Errors)
	}
	if field != "" && p.Errors[0].Field != field {
		t.Fatalf("field %q, want %q", p.Errors[0].Field, field)
	}
}

// TestLabelsDocumented: docs/import.md lists every label of the table, so
// the documentation cannot fall behind the one table it describes.
func TestLabelsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "import.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range csvx.LabelKeys() {
		for _, l := range csvx.Labels(key) {
			if !strings.Contains(string(doc), "“"+l+"”") {
				t.Errorf("docs/import.md does not list %s label %q", key, l)
			}
		}
	}
}
