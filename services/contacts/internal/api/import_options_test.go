package api_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/encoding/unicode"

	"github.com/opencrm/crm/pkg/problem"
)

// field is one multipart form field; file marks the upload itself.
type field struct {
	name, value string
	file        bool
}

func (e *env) uploadForm(t testing.TB, fields ...field) resp {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		if f.file {
			fw, err := mw.CreateFormFile("file", "contacts.csv")
			if err != nil {
				t.Fatal(err)
			}
			_, _ = fw.Write([]byte(f.value))
			continue
		}
		_ = mw.WriteField(f.name, f.value)
	}
	_ = mw.Close()
	req := httptest.NewRequest(http.MethodPost, "/contacts/import", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+e.admin)
	return e.serve(t, req)
}

func file(s string) field { return field{value: s, file: true} }

// wantExact compares a problem answer's whole body (request_id aside).
func wantExact(t testing.TB, r resp, status int, want map[string]any) {
	t.Helper()
	wantStatus(t, r, status)
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("content type %q", ct)
	}
	got := map[string]any{}
	for k, v := range r.Body {
		if k != "request_id" {
			got[k] = v
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problem (-want +got):\n%s", diff)
	}
}

func invalid(field, msg string) map[string]any {
	return map[string]any{"type": problem.TypeURI("validation_failed"), "title": "Unprocessable Entity", "status": 422.0,
		"detail": "one or more fields are invalid", "code": "validation_failed",
		"errors": []any{map[string]any{"field": field, "message": msg}}}
}

func TestImportMappingAndDryRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const german = "Vorname;Nachname;E-Mail;Ort;Fax\r\nJo;Bo;jo@x.test;Wien;1\r\nKai;;kai@x.test;Graz;2\r\n"
	mapping := `{"Vorname":"first_name","Nachname":"last_name","E-Mail":"email","Ort":"address_city","Fax":""}`

	t.Run("dry run validates, counts and writes nothing", func(t *testing.T) {
		r := e.uploadForm(t, field{name: "mapping", value: mapping}, field{name: "dry_run", value: "true"}, file(german))
		wantStatus(t, r, 200)
		want := map[string]any{"success": true, "message": "Dry run: would import 1 contacts, skipped 1", "imported": 1.0, "skipped": 1.0,
			"errors": []any{"Row 3: last_name is required"}, "encoding": "UTF-8", "delimiter": ";", "ignored_columns": []any{"Fax"}, "dry_run": true}
		if diff := cmp.Diff(want, r.Body); diff != "" {
			t.Errorf("answer (-want +got):\n%s", diff)
		}
		if n := e.count(t, `SELECT count(*) FROM contacts`) + e.count(t, `SELECT count(*) FROM outbox`); n != 0 {
			t.Fatalf("dry run wrote %d rows", n)
		}
	})
	t.Run("the same mapping imports", func(t *testing.T) {
		r := e.uploadForm(t, field{name: "mapping", value: mapping}, file(german))
		wantStatus(t, r, 200)
		if r.Body["imported"] != 1.0 || r.Body["dry_run"] != false {
			t.Fatalf("answer %v", r.Body)
		}
		if got := e.storedContact(t, "jo@x.test"); got.City != "Wien" || got.First != "Jo" {
			t.Errorf("stored %+v", got)
		}
	})
	t.Run("utf-16 tab-separated (Excel Unicode Text)", func(t *testing.T) {
		b, err := unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewEncoder().String("Name\tE-mail Address\tCity\r\nZoë Ångström\tzoe@x.test\tÅre\r\n")
		if err != nil {
			t.Fatal(err)
		}
		r := e.uploadForm(t, file(b))
		wantStatus(t, r, 200)
		if r.Body["encoding"] != "UTF-16LE" || r.Body["delimiter"] != "\t" || r.Body["imported"] != 1.0 {
			t.Fatalf("answer %v", r.Body)
		}
		if got := e.storedContact(t, "zoe@x.test"); got.First != "Zoë" || got.Last != "Ångström" || got.City != "Åre" {
			t.Errorf("stored %+v", got)
		}
	})
}

// TestImportBadOptions: each bad option or file is a 422 with its exact
// problem body, and nothing is written.
func TestImportBadOptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const csv = "First,Last,Vorname,Email\nA,B,C,d@x.test\n"
	for _, tc := range []struct {
		name   string
		fields []field
		want   map[string]any
	}{
		{"mapping not JSON", []field{{name: "mapping", value: `{"First":`}, file(csv)},
			invalid("mapping", `must be a JSON object from column label to field name, e.g. {"Mailing City":"address_city","Fax":""}`)},
		{"mapping names an unknown field", []field{{name: "mapping", value: `{"Vorname":"given_name"}`}, file(csv)},
			invalid("mapping", `column "Vorname" maps to "given_name", which is not a field (fields: address_city, address_country, address_state, address_street, address_zip, company_name, email, first_name, full_name, job_title, last_name, mobile, notes, phone, source, status, tags)`)},
		{"two columns to one field", []field{{name: "mapping", value: `{"First":"first_name","Vorname":"first_name"}`}, file(csv)},
			invalid("mapping", `columns "First" and "Vorname" both map to field "first_name"`)},
		{"mapping after the file", []field{file(csv), {name: "mapping", value: `{}`}},
			invalid("mapping", "must come before the file in the form")},
		{"dry_run not a boolean", []field{{name: "dry_run", value: "maybe"}, file(csv)},
			invalid("dry_run", "must be true or false")},
		{"binary (undetectable encoding)", []field{file("\x81\x8d\x8f\x90\x9d,\xff\n")},
			invalid("file", "the file is neither UTF-8 nor Windows-1252 text")},
		{"binary with NUL", []field{file("PK\x03\x04\x14\x00\x06\x00")},
			invalid("file", "the file is not a CSV text file")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantExact(t, e.uploadForm(t, tc.fields...), 422, tc.want)
			if n := e.count(t, `SELECT count(*) FROM contacts`) + e.count(t, `SELECT count(*) FROM outbox`); n != 0 {
				t.Fatalf("a rejected file wrote %d rows", n)
			}
		})
	}
}
