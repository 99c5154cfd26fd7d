package api_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCSVAdminOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wantProblem(t, e.do(t, "GET", "/contacts/template", e.user, nil), 403, "forbidden")
	wantProblem(t, e.do(t, "GET", "/contacts/export", e.user, nil), 403, "forbidden")
	wantProblem(t, e.upload(t, e.user, "file", "a.csv", []byte("first_name,last_name\nA,B\n")), 403, "forbidden")
	wantProblem(t, e.do(t, "GET", "/contacts/export", "", nil), 401, "unauthenticated")
	if n := e.count(t, `SELECT count(*) FROM contacts`); n != 0 {
		t.Errorf("non-admin import wrote %d rows", n)
	}

	r := e.do(t, "GET", "/contacts/template", e.admin, nil)
	wantStatus(t, r, 200)
	want := "first_name,last_name,email,phone,mobile,job_title,company_name,address_street,address_city,address_state,address_zip,address_country,notes,tags,status,source\n"
	if string(r.Raw) != want || r.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		!strings.Contains(r.Header.Get("Content-Disposition"), "attachment") || r.Header.Get("Link") != `</docs>; rel="help"` {
		t.Errorf("template %q %v", r.Raw, r.Header)
	}
}

func TestImport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	existing := id(t, e.do(t, "POST", "/companies", e.admin, map[string]any{"name": "Acme, Inc."}))
	old := id(t, e.do(t, "POST", "/contacts", e.admin, map[string]any{"first_name": "Old", "last_name": "Timer", "email": "old@x.test"}))

	file := "\xEF\xBB\xBFFirst Name;Surname;E-mail;Company;Notes;Status;Tags;Unknown Column\r\n" +
		"Ada;Lovelace;ada@x.test;acme, inc.;\"multi\nline; with \"\"quotes\"\"\";active;a, b, a;zzz\r\n" +
		";NoFirst;nofirst@x.test;;;;;\r\n" +
		"Bad;Email;not-an-email;;;;;\r\n" +
		"Dup;InTable;OLD@x.test;;;;;\r\n" +
		"Dup;InFile;ADA@x.test;;;;;\r\n" +
		";;;;;;;\r\n" +
		"Grace;Hopper;;Navy;;INACTIVE;;\r\n" +
		"Bad;Status;;;;archived;;\r\n" +
		"Alan;Turing;alan@x.test;Navy;;;;\r\n"
	r := e.upload(t, e.admin, "file", "contacts.csv", []byte(file))
	wantStatus(t, r, 200)
	want := map[string]any{
		"success": true, "imported": 3.0, "skipped": 5.0,
		"message": "Imported 3 contacts, skipped 5",
		"errors": []any{
			"Row 3: first_name is required",
			"Row 4: email must be a valid email address",
			"Row 5: duplicate email OLD@x.test (already exists)",
			"Row 6: duplicate email ADA@x.test (already in row 2)",
			"Row 9: status must be one of active, inactive",
		},
		"encoding": "UTF-8 with BOM", "delimiter": ";", "ignored_columns": []any{"Unknown Column"}, "dry_run": false,
		"duplicates": []any{map[string]any{"row": 5.0, "email": "OLD@x.test", "duplicate_of": float64(old)}},
	}
	if diff := cmp.Diff(want, r.Body); diff != "" {
		t.Errorf("import answer (-want +got):\n%s", diff)
	}
	l := e.do(t, "GET", "/contacts?search=lovelace", e.admin, nil)
	ada := l.Body["data"].([]any)[0].(map[string]any)
	if ada["company_id"] != float64(existing) || ada["company_name"] != "Acme, Inc." || ada["notes"] != "multi\nline; with \"quotes\"" || ada["tags"] != "a,b" {
		t.Errorf("imported ada %v", ada)
	}
	if n := e.count(t, `SELECT count(*) FROM companies WHERE name = 'Navy'`); n != 1 {
		t.Errorf("Navy created %d times", n)
	}
	if n := e.count(t, `SELECT count(*) FROM contacts WHERE company_name = 'Navy' AND (status = 'inactive') = (first_name = 'Grace')`); n != 2 {
		t.Errorf("navy contacts %d", n)
	}
	if n := e.count(t, `SELECT count(*) FROM outbox WHERE type = 'contact.created'`); n != 1 {
		t.Errorf("contact.created events %d, want 1 (the API create)", n)
	}
	if n := e.count(t, `SELECT sum(json_array_length(payload->'ids')) FROM outbox WHERE type = 'contacts.imported'`); n != 3 {
		t.Errorf("contacts.imported ids %d, want 3", n)
	}
	if n := e.count(t, `SELECT count(*) FROM outbox WHERE type = 'company.created'`); n != 2 {
		t.Errorf("company.created events %d, want 2", n)
	}
}

func TestImportRejectsWholeFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	header := "first_name,last_name,email\n"
	many := func(n int) []byte {
		var b bytes.Buffer
		b.WriteString(header)
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "F%d,L%d,\n", i, i)
		}
		return b.Bytes()
	}
	big := make([]byte, 0, 21<<20)
	big = append(big, header...)
	for len(big) < 20<<20+10 {
		big = append(big, "Someone,Somebody,someone@example.test\n"...)
	}
	tests := []struct {
		name    string
		field   string
		file    string
		content []byte
		status  int
		code    string
	}{
		{"no file", "", "", nil, 422, "validation_failed"},
		{"not csv (binary)", "file", "photo.csv", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), 422, "validation_failed"},
		{"not csv (extension)", "file", "contacts.xlsx", []byte(header + "A,B,\n"), 422, "validation_failed"},
		{"empty", "file", "empty.csv", nil, 422, "validation_failed"},
		{"header only", "file", "h.csv", []byte(header), 422, "validation_failed"},
		{"missing required columns", "file", "m.csv", []byte("first_name,email\nA,a@x.test\n"), 422, "validation_failed"},
		{"unclosed quote at the end", "file", "q.csv", []byte(header + "A,B,\nC,\"D,\n"), 422, "validation_failed"},
		{"too many rows", "file", "rows.csv", many(100_001), 413, "payload_too_large"},
		{"too many bytes", "file", "big.csv", big, 413, "payload_too_large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.upload(t, e.admin, tc.field, tc.file, tc.content)
			if tc.status == 422 {
				wantProblem(t, r, 422, tc.code, "file")
			} else {
				wantProblem(t, r, tc.status, tc.code)
			}
			if n := e.count(t, `SELECT count(*) FROM contacts`); n != 0 {
				t.Fatalf("a rejected file imported %d rows", n)
			}
		})
	}
	t.Run("not multipart", func(t *testing.T) {
		wantProblem(t, e.do(t, "POST", "/contacts/import", e.admin, map[string]any{"file": "x"}), 422, "validation_failed", "file")
	})
	t.Run("exactly at the row limit", func(t *testing.T) {
		r := e.upload(t, e.admin, "file", "ok.csv", many(100_000))
		wantStatus(t, r, 200)
		if r.Body["imported"] != 100_000.0 {
			t.Errorf("imported %v", r.Body["imported"])
		}
	})
}

func TestExport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	co := id(t, e.do(t, "POST", "/companies", e.admin, map[string]any{"name": "=HYPERLINK(\"x\")"}))
	a := id(t, e.do(t, "POST", "/contacts", e.admin, map[string]any{"first_name": "=cmd|' /C calc'!A0", "last_name": "Evil",
		"notes": "line1\nline2, \"q\"", "company_id": co, "status": "inactive"}))
	b := id(t, e.do(t, "POST", "/contacts", e.admin, map[string]any{"first_name": "Plain", "last_name": "Person", "email": "p@x.test", "phone": "+44 1"}))
	// A leading ";" splits the cell in semicolon-locale spreadsheets.
	semi := id(t, e.do(t, "POST", "/contacts", e.admin, map[string]any{"first_name": ";=1+1", "last_name": "Semi"}))

	r := e.do(t, "GET", "/contacts/export", e.admin, nil)
	wantStatus(t, r, 200)
	if r.Header.Get("Content-Disposition") != `attachment; filename="contacts-20260304.csv"` || r.Header.Get("Content-Type") != "text/csv; charset=utf-8" {
		t.Errorf("headers %v", r.Header)
	}
	lines := strings.SplitN(string(r.Raw), "\n", 2)
	if lines[0] != "id,first_name,last_name,email,phone,mobile,job_title,company_name,address_street,address_city,address_state,address_zip,address_country,notes,tags,status,source,created_at,updated_at" {
		t.Errorf("export header %q", lines[0])
	}
	body := string(r.Raw)
	for _, want := range []string{
		fmt.Sprintf("%d,'=cmd|' /C calc'!A0,Evil,,,,,\"'=HYPERLINK(\"\"x\"\")\",,,,,,\"line1\nline2, \"\"q\"\"\",,inactive,,", a),
		fmt.Sprintf("%d,Plain,Person,p@x.test,'+44 1,,,,,,,,,,,active,,", b),
		fmt.Sprintf("%d,';=1+1,Semi,,,,,,,,,,,,,active,,", semi),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("export lacks %q:\n%s", want, body)
		}
	}
	// Filters apply; an empty result is still a CSV with its header.
	r = e.do(t, "GET", "/contacts/export?status=inactive", e.admin, nil)
	if n := strings.Count(string(r.Raw), "Plain"); n != 0 {
		t.Errorf("filter ignored: %s", r.Raw)
	}
	r = e.do(t, "GET", "/contacts/export?search=nobody-matches", e.admin, nil)
	wantStatus(t, r, 200)
	if !strings.HasPrefix(string(r.Raw), "id,first_name") || strings.Count(string(r.Raw), "\n") != 1 {
		t.Errorf("empty export %q", r.Raw)
	}
	wantProblem(t, e.do(t, "GET", "/contacts/export?sort_by=nope", e.admin, nil), 422, "validation_failed", "sort_by")
}
