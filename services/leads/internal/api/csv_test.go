package api_test

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

func TestCSVTemplate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do("GET", "/leads/template", e.admin, nil)
	if r.status != 200 || string(r.body) != "first_name,last_name,email,phone,company,job_title,source,status,notes,tags\n" {
		t.Fatalf("template: %d %q", r.status, r.body)
	}
	if cd := r.header.Get("Content-Disposition"); !strings.Contains(cd, "attachment") || !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") {
		t.Fatalf("headers: %v", r.header)
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
			"Row 6: status must be one of new, contacted, qualified, disqualified",
			"Row 7: email must be a valid email address",
			"Row 5: a lead with email OLD@x.example already exists",
		},
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
	if r.status != 200 || !strings.Contains(r.header.Get("Content-Disposition"), "leads-") {
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
	waitLockWaiters(t, d, 1)
	go func() { second <- e.upload(e.user, "file", file) }()
	waitLockWaiters(t, d, 2)
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		got  resp
		want map[string]any
	}{
		{"first", <-first, map[string]any{"success": true, "imported": 3.0, "skipped": 0.0,
			"message": "Imported 3 leads, skipped 0", "errors": []any{}}},
		{"second", <-second, map[string]any{"success": true, "imported": 0.0, "skipped": 3.0,
			"message": "Imported 0 leads, skipped 3", "errors": []any{
				"Row 2: a lead with email ann@x.example already exists",
				"Row 3: a lead with email Bob@x.example already exists",
				"Row 4: a lead with email cy@x.example already exists",
			}}},
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
