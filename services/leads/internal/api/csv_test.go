package api_test

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/testdb"
)

func (e *env) upload(token, field, content string) resp {
	e.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if field != "" {
		fw, err := mw.CreateFormFile(field, "leads.csv")
		if err != nil {
			e.t.Fatal(err)
		}
		_, _ = fw.Write([]byte(content))
	}
	_ = mw.Close()
	req := httptest.NewRequest("POST", "/leads/import", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	return e.serve(req)
}

// TestCSVDownloads: the template and the export are attachments with a
// dated name, the filename quoted:
// attachment; filename="leads-YYYYMMDD.csv".
func TestCSVDownloads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const header = "first_name,last_name,email,phone,company,job_title,source,status,notes,tags\n"
	const exportHeader = "id,first_name,last_name,email,phone,company,job_title,source,status,notes,tags,created_at,updated_at\n"
	e.createLead(map[string]any{"first_name": "Ex", "last_name": "Port", "status": "contacted"})
	for _, tc := range []struct {
		name, path string
		file       string // filename, "" for leads-<today>.csv
		lines      int    // body lines; -1 = the template header exactly
	}{
		{"template", "/leads/template", "leads-template.csv", -1},
		{"export", "/leads/export", "", 2},
		{"export filtered", "/leads/export?status=contacted&sort_by=created_at", "", 2},
		{"export without rows", "/leads/export?status=qualified", "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			day := time.Now().UTC().Format("20060102")
			r := e.do("GET", tc.path, e.admin, nil)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			file := tc.file
			if file == "" {
				// The name is the day of the download: allow for midnight.
				file = "leads-" + day + ".csv"
				if now := time.Now().UTC().Format("20060102"); now != day && strings.Contains(r.header.Get("Content-Disposition"), now) {
					file = "leads-" + now + ".csv"
				}
			}
			want := map[string]string{
				"Content-Type":           "text/csv; charset=utf-8",
				"Content-Disposition":    `attachment; filename="` + file + `"`,
				"X-Content-Type-Options": "nosniff",
				"Cache-Control":          "no-store",
			}
			got := map[string]string{}
			for k := range want {
				got[k] = r.header.Get(k)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
			body := string(r.body)
			if tc.lines < 0 {
				if body != header {
					t.Errorf("template body = %q, want %q", body, header)
				}
				if link := r.header.Get("Link"); link != `</docs>; rel="help"` {
					t.Errorf("template Link = %q", link)
				}
				return
			}
			if !strings.HasPrefix(body, exportHeader) || strings.Count(body, "\n") != tc.lines {
				t.Errorf("export body: %q, want %d lines", body, tc.lines)
			}
		})
	}
}

func TestCSVImportExport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createLead(map[string]any{"first_name": "Old", "last_name": "Timer", "email": "old@x.example"})

	// BOM, semicolons, aliased headers, a bad row, duplicates in file and table.
	file := "\ufeffFirst Name;Last Name;E-mail;Company Name;Lead Status;Tags\n" +
		"Ann;Able;ann@x.example;\"=HYPERLINK(\"\"evil\"\")\";contacted;a, b ,a\n" +
		";NoFirst;nf@x.example;;;\n" +
		"Ann;Again;ANN@x.example;;;\n" +
		"Ole;Old;OLD@x.example;;;\n" +
		"Bad;Status;bs@x.example;;won;\n" +
		"Bad;Email;not-an-email;;;\n" +
		";;;;;\n" +
		"Cy;Clean;;Cyco;;\n"
	r := e.upload(e.user, "file", file)
	if r.status != 200 {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	m := r.json(t)
	want := map[string]any{
		"success": true, "imported": 2.0, "skipped": 5.0, "message": "Imported 2 leads, skipped 5",
		"errors": []any{
			"Row 3: first_name is required",
			"Row 4: duplicate email ANN@x.example (same as row 2)",
			"Row 5: a lead with email OLD@x.example already exists",
			"Row 6: status must be one of new, contacted, qualified, disqualified",
			"Row 7: email must be a valid email address",
		},
		"encoding": "UTF-8 with BOM", "delimiter": ";", "ignored_columns": []any{}, "dry_run": false,
		// The row an existing lead repeats, with that lead.
		"duplicates": []any{map[string]any{"row": 5.0, "email": "OLD@x.example", "duplicate_of": 1.0}},
	}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Fatalf("import result (-want +got):\n%s", diff)
	}
	names, page := listIDs(t, e, "")
	if diff := cmp.Diff([]string{"Ann", "Cy", "Old"}, names); diff != "" || page["total"] != 3.0 {
		t.Fatalf("leads after import (-want +got):\n%s total %v", diff, page["total"])
	}

	// Rejected files import nothing.
	for _, tc := range []struct {
		name, field, content string
		status               int
		code                 string
	}{
		{"no file", "", "", 422, "validation_failed"},
		{"missing required column", "file", "email\nx@y.example\n", 422, "validation_failed"},
		{"binary", "file", "\x00\x01\x02PK", 422, "validation_failed"},
		{"empty", "file", "", 422, "validation_failed"},
		{"unclosed quote", "file", "first_name,last_name\nA,B\n\"C,D\n", 422, "validation_failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, e.upload(e.user, tc.field, tc.content), tc.status, tc.code, "file")
		})
	}
	if _, page := listIDs(t, e, ""); page["total"] != 3.0 {
		t.Fatalf("a rejected file imported rows: total %v", page["total"])
	}

	r = e.do("GET", "/leads/export?sort_by=created_at", e.admin, nil)
	if r.status != 200 {
		t.Fatalf("export: %d %v", r.status, r.header)
	}
	lines := strings.Split(strings.TrimSpace(string(r.body)), "\n")
	if lines[0] != "id,first_name,last_name,email,phone,company,job_title,source,status,notes,tags,created_at,updated_at" || len(lines) != 4 {
		t.Fatalf("export: %q", r.body)
	}
	if !strings.Contains(lines[2], `"'=HYPERLINK(""evil"")"`) || !strings.Contains(lines[2], `"a,b"`) {
		t.Fatalf("export row not neutralised: %q", lines[2])
	}
	// Export takes the list filters.
	r = e.do("GET", "/leads/export?status=contacted", e.admin, nil)
	if n := len(strings.Split(strings.TrimSpace(string(r.body)), "\n")); n != 2 {
		t.Fatalf("filtered export has %d lines: %q", n, r.body)
	}
	wantProblem(t, e.do("GET", "/leads/export?sort_by=nope", e.admin, nil), 422, "validation_failed", "sort_by")
}

// TestCSVImportConcurrent uploads one file twice at once: the second
// import must see the first one's rows and skip them as duplicates. The
// test holds a SHARE lock on leads, so the first import stops at its
// write; the second starts only once the first waits, and the lock is
// released only once both wait.
func TestCSVImportConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	d := e.store.DB()
	file := "first_name,last_name,email\nAnn,Able,ann@x.example\nBob,Baker,Bob@x.example\nCy,Cole,cy@x.example\n"

	hold, err := d.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(ctx) }()
	if _, err := hold.Exec(ctx, `LOCK TABLE leads IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	first, second := make(chan resp, 1), make(chan resp, 1)
	go func() { first <- e.upload(e.user, "file", file) }()
	testdb.WaitLockWaiters(t, d, 1)
	go func() { second <- e.upload(e.user, "file", file) }()
	testdb.WaitLockWaiters(t, d, 2)
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		got  resp
		want map[string]any
	}{
		{"first", <-first, map[string]any{"success": true, "imported": 3.0, "skipped": 0.0,
			"message": "Imported 3 leads, skipped 0", "errors": []any{}, "encoding": "UTF-8", "delimiter": ",",
			"ignored_columns": []any{}, "dry_run": false}},
		{"second", <-second, map[string]any{"success": true, "imported": 0.0, "skipped": 3.0,
			"message": "Imported 0 leads, skipped 3", "errors": []any{
				"Row 2: a lead with email ann@x.example already exists",
				"Row 3: a lead with email Bob@x.example already exists",
				"Row 4: a lead with email cy@x.example already exists",
			}, "encoding": "UTF-8", "delimiter": ",", "ignored_columns": []any{}, "dry_run": false,
			"duplicates": []any{map[string]any{"row": 2.0, "email": "ann@x.example", "duplicate_of": 1.0}, map[string]any{"row": 3.0, "email": "Bob@x.example", "duplicate_of": 2.0},
				map[string]any{"row": 4.0, "email": "cy@x.example", "duplicate_of": 3.0}}}},
	} {
		if tc.got.status != 200 {
			t.Fatalf("%s import: %d %s", tc.name, tc.got.status, tc.got.body)
		}
		if diff := cmp.Diff(tc.want, tc.got.json(t)); diff != "" {
			t.Errorf("%s import (-want +got):\n%s", tc.name, diff)
		}
	}
	if n := e.countRows(`SELECT count(*) FROM leads`); n != 3 {
		t.Fatalf("leads = %d, want 3", n)
	}
}

// TestCSVImportNoDataRows: a file with a header and no data rows (blank
// lines do not count) is a 422 on "file", as in contacts' import.
func TestCSVImportNoDataRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct{ name, content string }{
		{"header only", "first_name,last_name,email\n"},
		{"header without newline", "first_name,last_name"},
		{"header with BOM and CRLF", "\ufeffFirst Name;Last Name\r\n"},
		{"header and blank lines", "first_name,last_name\n\n,\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantExactProblem(t, e.upload(e.user, "file", tc.content),
				problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"file", "the file has no data rows"}))
		})
	}
	if n := e.countRows(`SELECT count(*) FROM leads`); n != 0 {
		t.Fatalf("leads = %d, want 0", n)
	}
}

// TestCSVImportStatusCase: status values are matched case-insensitively
// (as contacts' import does) and stored lower-case.
func TestCSVImportStatusCase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	file := "First Name,Last Name,Status\n" +
		"A,One,New\n" +
		"B,Two,QUALIFIED\n" +
		"C,Three, Contacted \n" +
		"D,Four,DisQualified\n" +
		"E,Five,\n" +
		"F,Six,Won\n"
	r := e.upload(e.user, "file", file)
	if r.status != 200 {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	want := map[string]any{
		"success": true, "imported": 5.0, "skipped": 1.0, "message": "Imported 5 leads, skipped 1",
		"errors":   []any{"Row 7: status must be one of new, contacted, qualified, disqualified"},
		"encoding": "UTF-8", "delimiter": ",", "ignored_columns": []any{}, "dry_run": false,
	}
	if diff := cmp.Diff(want, r.json(t)); diff != "" {
		t.Fatalf("import result (-want +got):\n%s", diff)
	}
	got := map[string]string{}
	rows, err := e.store.DB().Query(context.Background(), `SELECT first_name, status FROM leads`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, status string
		if err := rows.Scan(&name, &status); err != nil {
			t.Fatal(err)
		}
		got[name] = status
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	wantStatus := map[string]string{"A": "new", "B": "qualified", "C": "contacted", "D": "disqualified", "E": "new"}
	if diff := cmp.Diff(wantStatus, got); diff != "" {
		t.Fatalf("statuses (-want +got):\n%s", diff)
	}
}

// TestCSVImportErrorOrder: errors are listed in row order whatever found
// them (the row's own checks, the file's earlier rows, the table), and the
// 1,000 kept are the first 1,000 rows' errors.
func TestCSVImportErrorOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		rows    []string // data rows, from row 2
		skipped int
		errors  []string // the expected errors; nil = generated below
		// duplicates are the rows an existing lead repeats (the email
		// index's lead ids: Taken1 is 1, taken2 is 2), wherever the
		// errors were cut.
		duplicates []any
	}{
		{
			name: "mixed",
			rows: []string{
				"Tab,Le,taken1@x.example", // 2: in the table
				",NoFirst,a@x.example",    // 3: invalid
				"Fine,One,fine@x.example", // 4
				"Dup,File,FINE@x.example", // 5: earlier in the file
				"Tab,Le,TAKEN2@x.example", // 6: in the table
				"Bad,Mail,not-an-email",   // 7: invalid
				"Tab,Le,taken1@X.example", // 8: earlier in the file (row 2)
			},
			skipped: 6,
			errors: []string{
				"Row 2: a lead with email taken1@x.example already exists",
				"Row 3: first_name is required",
				"Row 5: duplicate email FINE@x.example (same as row 4)",
				"Row 6: a lead with email TAKEN2@x.example already exists",
				"Row 7: email must be a valid email address",
				"Row 8: duplicate email taken1@X.example (same as row 2)",
			},
			duplicates: []any{map[string]any{"row": 2.0, "email": "taken1@x.example", "duplicate_of": 1.0}, map[string]any{"row": 6.0, "email": "TAKEN2@x.example", "duplicate_of": 2.0}},
		},
		{
			name: "capped at 1000",
			rows: func() []string {
				out := []string{"Tab,Le,taken1@x.example"} // row 2
				for i := 0; i < 1001; i++ {                // rows 3..1003
					out = append(out, ",NoFirst,")
				}
				return append(out, "Tab,Le,taken2@x.example") // row 1004
			}(),
			skipped:    1003,
			duplicates: []any{map[string]any{"row": 2.0, "email": "taken1@x.example", "duplicate_of": 1.0}, map[string]any{"row": 1004.0, "email": "taken2@x.example", "duplicate_of": 2.0}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.createLead(map[string]any{"first_name": "Taken", "last_name": "One", "email": "Taken1@x.example"})
			e.createLead(map[string]any{"first_name": "Taken", "last_name": "Two", "email": "taken2@x.example"})
			r := e.upload(e.user, "file", "first_name,last_name,email\n"+strings.Join(tc.rows, "\n")+"\n")
			if r.status != 200 {
				t.Fatalf("import: %d %s", r.status, r.body)
			}
			errs := tc.errors
			if errs == nil {
				errs = []string{"Row 2: a lead with email taken1@x.example already exists"}
				for row := 3; len(errs) < 1000; row++ {
					errs = append(errs, fmt.Sprintf("Row %d: first_name is required", row))
				}
			}
			imported := len(tc.rows) - tc.skipped
			want := map[string]any{
				"success": true, "imported": float64(imported), "skipped": float64(tc.skipped),
				"message": fmt.Sprintf("Imported %d leads, skipped %d", imported, tc.skipped), "errors": toAny(errs),
				"encoding": "UTF-8", "delimiter": ",", "ignored_columns": []any{}, "dry_run": false,
				"duplicates": tc.duplicates,
			}
			if diff := cmp.Diff(want, r.json(t)); diff != "" {
				t.Fatalf("import result (-want +got):\n%s", diff)
			}
		})
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
