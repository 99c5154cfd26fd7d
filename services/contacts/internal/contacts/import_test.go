package contacts_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/csvx"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// imported is what the tests compare of a row handed to the store.
type imported struct {
	Row                         int
	First, Last, Company, Email string
	Status, Tags, Notes         string
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// readAll runs ReadImport over file and returns the rows in the batches
// it handed over, the batch sizes and the finished result.
func readAll(t *testing.T, file string, opt contacts.ImportOptions) ([]imported, []int, contacts.ImportResult, error) {
	t.Helper()
	var rows []imported
	var sizes []int
	res, err := contacts.ReadImport(strings.NewReader(file), opt, func(b []contacts.ImportRow) error {
		sizes = append(sizes, len(b))
		for _, r := range b {
			c := r.Contact
			rows = append(rows, imported{Row: r.Row, First: c.FirstName, Last: c.LastName, Company: r.CompanyName,
				Email: deref(c.Email), Status: c.Status, Tags: deref(c.Tags), Notes: deref(c.Notes)})
		}
		return nil
	})
	res.Finish()
	return rows, sizes, res, err
}

// TestReadImport: a file's rows are validated as contact writes are, its
// repeated emails skipped, its blank rows ignored; the reasons name the
// spreadsheet row. (Duplicates of stored contacts are the store's.)
func TestReadImport(t *testing.T) {
	t.Parallel()
	file := "\xEF\xBB\xBFFirst Name;Surname;E-mail;Company;Notes;Status;Tags;Unknown Column\r\n" +
		"Ada;Lovelace;ada@x.test;acme, inc.;\"multi\nline; with \"\"quotes\"\"\";active;a, b, a;zzz\r\n" +
		";NoFirst;nofirst@x.test;;;;;\r\n" +
		"Bad;Email;not-an-email;;;;;\r\n" +
		"Dup;InFile;ADA@x.test;;;;;\r\n" +
		";;;;;;;\r\n" +
		"Grace;Hopper;;Navy;;INACTIVE;;\r\n" +
		"Bad;Status;;;;archived;;\r\n" +
		"Alan;Turing;alan@x.test;  Navy ;;;;\r\n"
	rows, _, res, err := readAll(t, file, contacts.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantRows := []imported{
		{Row: 2, First: "Ada", Last: "Lovelace", Company: "acme, inc.", Email: "ada@x.test", Status: "active",
			Tags: "a,b", Notes: "multi\nline; with \"quotes\""},
		{Row: 7, First: "Grace", Last: "Hopper", Company: "Navy", Status: "inactive"},
		{Row: 9, First: "Alan", Last: "Turing", Company: "Navy", Email: "alan@x.test", Status: "active"},
	}
	if diff := cmp.Diff(wantRows, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	want := contacts.ImportResult{ImportResult: envelope.ImportResult{
		Skipped: 4,
		Errors: []string{
			"Row 3: first_name is required",
			"Row 4: email must be a valid email address",
			"Row 5: duplicate email ADA@x.test (already in row 2)",
			"Row 8: status must be one of active, inactive",
		},
		Encoding: "UTF-8 with BOM", Delimiter: ";", IgnoredColumns: []string{"Unknown Column"},
	}}
	if diff := cmp.Diff(want, res, cmp.AllowUnexported(contacts.ImportResult{}), ignoreRowErrs); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

// ignoreRowErrs leaves out the unformatted reasons Errors is made of.
var ignoreRowErrs = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".rowErrs" }, cmp.Ignore())

// TestReadImportBatches: valid rows are handed over ImportBatch at a time,
// the rest in a last, shorter batch.
func TestReadImportBatches(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("first_name,last_name,email\n")
	n := contacts.ImportBatch + 1
	for i := range n {
		fmt.Fprintf(&b, "F%d,L%d,p%d@x.test\n", i, i, i)
	}
	rows, sizes, _, err := readAll(t, b.String(), contacts.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{contacts.ImportBatch, 1}, sizes); diff != "" {
		t.Errorf("batch sizes (-want +got):\n%s", diff)
	}
	if len(rows) != n || rows[0].Row != 2 || rows[n-1].Row != n+1 {
		t.Errorf("%d rows, first row %d, last row %d", len(rows), rows[0].Row, rows[len(rows)-1].Row)
	}
}

// TestReadImportRejects: a file without data rows, or one csvx refuses,
// is refused as a whole: an invalid-input fault on the file field.
func TestReadImportRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		mapping    map[string]string
		field      string
	}{
		{"header only", "first_name,last_name,email\n", nil, csvx.FileField},
		{"blank rows only", "first_name,last_name\n,\n , \n", nil, csvx.FileField},
		{"missing required columns", "first_name,email\nA,a@x.test\n", nil, csvx.FileField},
		{"mapping to no field", "Vorname,Nachname\nA,B\n", map[string]string{"Vorname": "nickname"}, csvx.MappingField},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, _, err := readAll(t, tt.file, contacts.ImportOptions{Mapping: tt.mapping})
			if diff := cmp.Diff([]string{tt.field}, invalidFields(t, err)); diff != "" {
				t.Errorf("invalid fields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestImportResultFinish: reasons are ordered by row (the reader's and
// the store's come separately) and at most MaxImportErrs are listed,
// while Skipped counts them all.
func TestImportResultFinish(t *testing.T) {
	t.Parallel()
	var r contacts.ImportResult
	r.AddError(contacts.RowError{Row: 9, Message: "nine"})
	r.AddError(contacts.RowError{Row: 3, Message: "three"})
	r.AddError(contacts.RowError{Row: 5, Message: "five"})
	r.Finish()
	if diff := cmp.Diff([]string{"Row 3: three", "Row 5: five", "Row 9: nine"}, r.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	var many contacts.ImportResult
	for i := range contacts.MaxImportErrs + 5 {
		many.AddError(contacts.RowError{Row: contacts.MaxImportErrs + 10 - i, Message: "x"})
	}
	many.Finish()
	if many.Skipped != contacts.MaxImportErrs+5 || len(many.Errors) != contacts.MaxImportErrs || many.Errors[0] != "Row 6: x" {
		t.Errorf("skipped %d, %d errors starting %q", many.Skipped, len(many.Errors), many.Errors[0])
	}
}

func TestImportSummary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		res  contacts.ImportResult
		want string
	}{
		{contacts.ImportResult{ImportResult: envelope.ImportResult{Imported: 3, Skipped: 5}}, "Imported 3 contacts, skipped 5"},
		{contacts.ImportResult{ImportResult: envelope.ImportResult{Imported: 2, DryRun: true}}, "Dry run: would import 2 contacts, skipped 0"},
	}
	for _, tt := range tests {
		if got := tt.res.Summary(); got != tt.want {
			t.Errorf("Summary() = %q, want %q", got, tt.want)
		}
	}
}
