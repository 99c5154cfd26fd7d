package api_test

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// exports holds real-looking export files of other systems (header line as
// each product writes it, CRLF, its quoting and encoding, empty columns),
// shared with the contacts service and pkg/csvx.
var exports = filepath.Join("..", "..", "..", "..", "pkg", "csvx", "testdata", "exports")

type storedLead struct {
	First, Last, Email, Phone, Company, JobTitle, Source, Status, Notes, Tags string
}

func (e *env) storedLeads(t *testing.T, emails ...string) []storedLead {
	t.Helper()
	out := make([]storedLead, 0, len(emails))
	for _, email := range emails {
		var s storedLead
		if err := e.store.DB().QueryRow(context.Background(), `SELECT first_name, last_name, coalesce(email,''),
			coalesce(phone,''), coalesce(company,''), coalesce(job_title,''), coalesce(source,''), status,
			coalesce(notes,''), coalesce(tags,'') FROM leads WHERE email = $1`, email).Scan(
			&s.First, &s.Last, &s.Email, &s.Phone, &s.Company, &s.JobTitle, &s.Source, &s.Status, &s.Notes, &s.Tags); err != nil {
			t.Fatalf("lead %s: %v", email, err)
		}
		out = append(out, s)
	}
	return out
}

// TestImportOtherSystems: lead and contact exports of other products import
// unchanged as leads, their status values mapped onto ours.
func TestImportOtherSystems(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		file     string
		encoding string
		ignored  []any
		want     []storedLead
	}{
		{"salesforce-leads-report.csv", "UTF-8",
			[]any{"Lead Owner", "Mobile", "Street", "City", "State/Province", "Zip/Postal Code", "Country", "Rating", "Create Date"},
			[]storedLead{
				{"Ada", "Open", "open@sflead.example", "+1 555 0201", "A Co", "CTO", "Web", "new", "", ""},
				{"Bob", "Working", "working@sflead.example", "", "B Co", "", "Phone Inquiry", "contacted", "", ""},
				{"Cy", "Converted", "converted@sflead.example", "", "C Co", "", "Partner Referral", "qualified", "", ""},
				{"Di", "Lost", "lost@sflead.example", "", "D Co", "", "Other", "disqualified", "", ""},
			}},
		{"salesforce-leads-object.csv", "UTF-8",
			[]any{"Id", "Salutation", "Name", "Street", "City", "State", "PostalCode", "Country", "MobilePhone", "Website",
				"Industry", "Rating", "OwnerId", "IsConverted", "CreatedDate"},
			[]storedLead{{"Ivan", "Sutherland", "ivan@sfleadobj.example", "+1 801 555 0202", "Evans & Sutherland", "Founder", "Web", "contacted", "Sketchpad", ""}}},
		{"hubspot-leads.csv", "UTF-8",
			[]any{"Record ID", "Create Date"},
			[]storedLead{
				{"Nina", "New", "new@hslead.example", "", "N Co", "", "Organic Search", "new", "", ""},
				{"Otto", "Progress", "progress@hslead.example", "", "O Co", "", "Direct Traffic", "contacted", "", ""},
				{"Pia", "Deal", "deal@hslead.example", "", "P Co", "", "", "qualified", "", ""},
				{"Quin", "Unq", "unq@hslead.example", "", "Q Co", "", "", "disqualified", "", ""},
				{"Rae", "Attempt", "attempt@hslead.example", "", "R Co", "", "", "contacted", "", ""},
			}},
		{"zoho-leads.csv", "UTF-8",
			[]any{"Record Id", "Lead Owner", "Full Name", "Fax", "Mobile", "Website", "Industry", "No. of Employees", "Annual Revenue",
				"Rating", "Email Opt Out", "Street", "City", "State", "Zip Code", "Country", "Salutation", "Created Time"},
			[]storedLead{
				{"Ann", "Attempted", "attempted@zoholead.example", "+44 1", "Z1 Ltd", "Buyer", "Cold Call", "contacted", "", "a;b"},
				{"Ben", "Junk", "junk@zoholead.example", "", "Z2 Ltd", "", "Advertisement", "disqualified", "", ""},
				{"Cat", "Pre", "pre@zoholead.example", "", "Z3 Ltd", "", "Web Download", "contacted", "", ""},
				{"Dan", "Not", "not@zoholead.example", "", "Z4 Ltd", "", "Web Download", "new", "", ""},
			}},
		{"pipedrive-leads.csv", "UTF-8",
			[]any{"Lead - Title", "Lead - Owner", "Lead - Value", "Lead - Created"},
			[]storedLead{{"Dorothy", "Vaughan", "dorothy@pdlead.example", "+1 555 0203", "NACA", "", "Manually created", "new", "", "Hot"}}},
		{"outlook-contacts.csv", "Windows-1252", nil,
			[]storedLead{{"Jürgen", "Müller", "juergen@outlook.example", "+49 211 555 0107", "Müller & Söhne GmbH", "Geschäftsführer", "", "new", "Preis: 100 €", "Kunden"}}},
		{"google-contacts.csv", "UTF-8", nil,
			[]storedLead{{"Katherine", "Johnson", "katherine@google.example", "+1 757 555 0109", "NASA", "Mathematician", "", "new", "Hidden figure", "* myContacts ::: Work"}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(exports, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			r := e.upload(e.user, "file", string(raw))
			if r.status != 200 {
				t.Fatalf("import: %d %s", r.status, r.body)
			}
			m := r.json(t)
			if m["imported"] != float64(len(tc.want)) || m["skipped"] != 0.0 || m["encoding"] != tc.encoding || m["delimiter"] != "," {
				t.Errorf("answer %v", m)
			}
			if tc.ignored != nil {
				if diff := cmp.Diff(tc.ignored, m["ignored_columns"]); diff != "" {
					t.Errorf("ignored_columns (-want +got):\n%s", diff)
				}
			}
			emails := make([]string, len(tc.want))
			for i, w := range tc.want {
				emails[i] = w.Email
			}
			if diff := cmp.Diff(tc.want, e.storedLeads(t, emails...)); diff != "" {
				t.Errorf("stored (-want +got):\n%s", diff)
			}
		})
	}
}

// uploadForm posts fields in order; the one named "file" is the upload.
func (e *env) uploadForm(fields ...[2]string) resp {
	e.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		if f[0] == "file" {
			fw, _ := mw.CreateFormFile("file", "leads.csv")
			_, _ = fw.Write([]byte(f[1]))
			continue
		}
		_ = mw.WriteField(f[0], f[1])
	}
	_ = mw.Close()
	req := httptest.NewRequest("POST", "/leads/import", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+e.user)
	return e.serve(req)
}

func TestImportMappingDryRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const file = "Kontakt\tFirma\tStatus\tFax\r\nJo Bo\tAcme\tWorking - Contacted\t1\r\nKai\tKo\tnew\t2\r\nLu Li\tLo\tnonsense\t3\r\n"
	mapping := `{"Kontakt":"full_name","Firma":"company","Fax":""}`
	r := e.uploadForm([2]string{"mapping", mapping}, [2]string{"dry_run", "true"}, [2]string{"file", file})
	want := map[string]any{"success": true, "message": "Dry run: would import 1 leads, skipped 2", "imported": 1.0, "skipped": 2.0,
		"errors":   []any{"Row 3: last_name is required", "Row 4: status must be one of new, contacted, qualified, disqualified"},
		"encoding": "UTF-8", "delimiter": "\t", "ignored_columns": []any{"Fax"}, "dry_run": true}
	if diff := cmp.Diff(want, r.json(t)); diff != "" {
		t.Fatalf("dry run (-want +got):\n%s", diff)
	}
	if n := e.countRows(`SELECT count(*) FROM leads`) + e.countRows(`SELECT count(*) FROM outbox`); n != 0 {
		t.Fatalf("dry run wrote %d rows", n)
	}
	r = e.uploadForm([2]string{"mapping", mapping}, [2]string{"file", file})
	if m := r.json(t); m["imported"] != 1.0 || m["dry_run"] != false {
		t.Fatalf("import %v", m)
	}
	if diff := cmp.Diff([]storedLead{{First: "Jo", Last: "Bo", Company: "Acme", Status: "contacted"}}, e.storedLeadsBy(t, "Acme")); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
}

func (e *env) storedLeadsBy(t *testing.T, company string) []storedLead {
	t.Helper()
	var s storedLead
	if err := e.store.DB().QueryRow(context.Background(), `SELECT first_name, last_name, coalesce(email,''),
		coalesce(phone,''), coalesce(company,''), coalesce(job_title,''), coalesce(source,''), status,
		coalesce(notes,''), coalesce(tags,'') FROM leads WHERE company = $1`, company).Scan(
		&s.First, &s.Last, &s.Email, &s.Phone, &s.Company, &s.JobTitle, &s.Source, &s.Status, &s.Notes, &s.Tags); err != nil {
		t.Fatal(err)
	}
	return []storedLead{s}
}

// TestImportBadOptions: exact problem bodies, and nothing written.
func TestImportBadOptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const csv = "First,Last,Vorname,Email\nA,B,C,d@x.example\n"
	fields := `address_city, company, email, first_name, full_name, job_title, last_name, notes, phone, source, status, tags`
	fields = strings.ReplaceAll(fields, "address_city, ", "")
	for _, tc := range []struct {
		name   string
		fields [][2]string
		field  string
		msg    string
	}{
		{"mapping not JSON", [][2]string{{"mapping", `{"First":`}, {"file", csv}}, "mapping",
			`must be a JSON object from column label to field name, e.g. {"Mailing City":"address_city","Fax":""}`},
		{"mapping names an unknown field", [][2]string{{"mapping", `{"Vorname":"given_name"}`}, {"file", csv}}, "mapping",
			`column "Vorname" maps to "given_name", which is not a field (fields: ` + fields + `)`},
		{"two columns to one field", [][2]string{{"mapping", `{"First":"first_name","Vorname":"first_name"}`}, {"file", csv}}, "mapping",
			`columns "First" and "Vorname" both map to field "first_name"`},
		{"dry_run after the file", [][2]string{{"file", csv}, {"dry_run", "true"}}, "dry_run", "must come before the file in the form"},
		{"binary (undetectable encoding)", [][2]string{{"file", "\x81\x8d\x8f\x90\x9d,\xff\n"}}, "file",
			"the file is neither UTF-8 nor Windows-1252 text"},
		{"broken quote after valid rows", [][2]string{{"file", "first_name,last_name\nA,B\nC,\"D\n"}}, "file",
			`Row 3: a quoted cell is not closed (or has a stray quote) starting at line 3`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.uploadForm(tc.fields...)
			wantExactProblem(t, r, problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{tc.field, tc.msg}))
			if n := e.countRows(`SELECT count(*) FROM leads`) + e.countRows(`SELECT count(*) FROM outbox`); n != 0 {
				t.Fatalf("a rejected upload wrote %d rows", n)
			}
		})
	}
}

// TestImportStreams: a 19 MB file (about 96,000 rows) imports with the
// live heap growing far less than the file; it grew by about four times
// the file's size when the import collected every row first. The live
// heap is what each garbage collection found reachable
// (/gc/heap/live:bytes), so garbage not yet collected does not count. Not
// parallel: the heap is the process's, and parallel tests run only after
// this one.
func TestImportStreams(t *testing.T) {
	e := newEnv(t)
	var b strings.Builder
	b.WriteString("first_name,last_name,email,phone,company,job_title,source,status,notes,tags\n")
	rows := 0
	for ; b.Len() < 19<<20; rows++ {
		fmt.Fprintf(&b, "First%d,Last%d,user%d@stream.example,+1 555 %07d,Company %d,Engineer,web,new,%s,\"a,b\"\n",
			rows, rows, rows, rows, rows%1000, strings.Repeat("n", 110))
	}
	size := b.Len()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", "big.csv")
	_, _ = fw.Write([]byte(b.String()))
	_ = mw.Close()
	b = strings.Builder{}
	req := httptest.NewRequest("POST", "/leads/import", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+e.user)

	defer debug.SetGCPercent(debug.SetGCPercent(10)) // more collections, more samples
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	runtime.GC()
	metrics.Read(live)
	base := live[0].Value.Uint64()
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	r := e.serve(req)
	close(done)
	<-sampled
	if r.status != 200 {
		t.Fatalf("import: %d %.300s", r.status, r.body)
	}
	growth := int64(peak.Load()) - int64(base)
	t.Logf("file %.1f MB, %d rows; live heap growth at peak %.1f MB", float64(size)/(1<<20), rows, float64(growth)/(1<<20))
	if growth > 16<<20 {
		t.Errorf("live heap grew by %.1f MB importing a %.1f MB file, want < 16 MB", float64(growth)/(1<<20), float64(size)/(1<<20))
	}
	if n := e.countRows(`SELECT count(*) FROM leads`); n != rows {
		t.Errorf("imported %d, want %d", n, rows)
	}
}
