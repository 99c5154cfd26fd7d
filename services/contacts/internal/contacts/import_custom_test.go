package contacts_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// csvDefs are custom fields of contacts as the tests define them.
func csvDefs() []customfield.Definition {
	return []customfield.Definition{
		{Name: "renewal_date", Label: "Renewal Date", Type: customfield.Date},
		{Name: "tier", Label: "Tier", Type: customfield.Enum, Options: []propertyapi.Option{{Value: "gold"}, {Value: "silver"}}},
		{Name: "member_no", Label: "Member No.", Type: customfield.Text, Unique: true},
		{Name: "vip", Label: "VIP", Type: customfield.Boolean},
		{Name: "alt_email", Label: "E-mail", Type: customfield.Email},
		{Name: "origin", Label: "Lead Source", Type: customfield.Text},
		{Name: "danger", Label: "=HYPERLINK(\"x\")", Type: customfield.Text},
	}
}

// TestCustomColumns: a field's column is headed by its label unless the
// label would be read as another column (a built-in one's name, here
// "email", or another system's header of one, "Lead Source") or folds to
// an earlier label; the template escapes a label a spreadsheet would run.
func TestCustomColumns(t *testing.T) {
	t.Parallel()
	defs := append(csvDefs(), customfield.Definition{Name: "tier2", Label: "tier", Type: customfield.Text},
		customfield.Definition{Name: "dots", Label: "...", Type: customfield.Text})
	var got []string
	for _, c := range contacts.CustomColumns(defs) {
		got = append(got, c.Header)
	}
	want := []string{"Renewal Date", "Tier", "Member No.", "VIP", "cf.alt_email", "cf.origin", `=HYPERLINK("x")`, "cf.tier2", "cf.dots"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	h := contacts.ImportHeader(contacts.CustomColumns(csvDefs()))
	if diff := cmp.Diff([]string{"source", "Renewal Date", "Tier", "Member No.", "VIP", "cf.alt_email", "cf.origin", `'=HYPERLINK("x")`},
		h[len(contacts.ImportColumns)-1:]); diff != "" {
		t.Errorf("template header (-want +got):\n%s", diff)
	}
}

// customRow is what the tests compare of a row with custom values.
type customRow struct {
	Row    int
	Source string
	Custom customfield.Values
}

func readCustom(t *testing.T, file string, opt contacts.ImportOptions) ([]customRow, contacts.ImportResult, error) {
	t.Helper()
	var rows []customRow
	res, err := contacts.ReadImport(strings.NewReader(file), opt, func(b []contacts.ImportRow) error {
		for _, r := range b {
			rows = append(rows, customRow{r.Row, deref(r.Contact.Source), r.Custom})
		}
		return nil
	})
	res.Finish()
	return rows, res, err
}

// TestReadImportCustomFields: a custom field's column is found by its
// label (in any case) or by cf.<name>; each cell is parsed by the field's
// type into its stored form; a bad cell, a missing required value and a
// unique value repeated in the file are the row's errors, named by the
// column cf.<name>.
func TestReadImportCustomFields(t *testing.T) {
	t.Parallel()
	defs := append(csvDefs(), customfield.Definition{Name: "region", Label: "Region Code", Type: customfield.Text, Required: true})
	file := "first_name,last_name,renewal date,CF.TIER,Member No.,vip,cf.origin,source,Region Code\n" +
		"Ada,Lovelace,2026-03-01,gold,M-1,yes,Web,Referral,EU\n" +
		"Bad,Date,2026-02-30,,,,,,EU\n" +
		"Bad,Tier,,platinum,,,,,EU\n" +
		"Dup,Member,,,M-1,,,,EU\n" +
		"No,Region,,,,,,,\n" +
		"Two,Errors,13/01/2026,silver,,maybe,,,EU\n" +
		"Plain,Row,,,,,,,EU\n"
	rows, res, err := readCustom(t, file, contacts.ImportOptions{Definitions: defs})
	if err != nil {
		t.Fatal(err)
	}
	want := []customRow{
		{2, "Referral", customfield.Values{"renewal_date": "2026-03-01", "tier": "gold", "member_no": "M-1", "vip": true, "origin": "Web", "region": "EU"}},
		{8, "", customfield.Values{"region": "EU"}},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	wantErrs := []string{
		"Row 3: cf.renewal_date must be a date in the form YYYY-MM-DD",
		"Row 4: cf.tier must be one of gold, silver",
		"Row 5: duplicate cf.member_no M-1 (already in row 2)",
		"Row 6: cf.region is required",
		"Row 7: cf.renewal_date must be a date in the form YYYY-MM-DD; cf.vip must be true or false",
	}
	if diff := cmp.Diff(wantErrs, res.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if len(res.IgnoredColumns) != 0 {
		t.Errorf("ignored %v", res.IgnoredColumns)
	}
}

// TestReadImportCustomMapping: mapping sends another system's column to
// cf.<name>; without custom values a row holds none (nil), and a file
// without custom columns reads as it always did.
func TestReadImportCustomMapping(t *testing.T) {
	t.Parallel()
	file := "First Name,Last Name,Lifecycle Stage,Lead Status\n" +
		"Ada,Lovelace,Lead,In Progress\n" +
		"Alan,Turing,,\n"
	rows, res, err := readCustom(t, file, contacts.ImportOptions{Definitions: csvDefs(),
		Mapping: map[string]string{"Lead Status": "cf.member_no"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []customRow{{2, "", customfield.Values{"member_no": "In Progress"}}, {3, "", nil}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Lifecycle Stage"}, res.IgnoredColumns); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}

	_, _, err = readCustom(t, file, contacts.ImportOptions{Definitions: csvDefs(),
		Mapping: map[string]string{"Lead Status": "cf.nope"}})
	if diff := cmp.Diff([]string{"mapping"}, invalidFields(t, err)); diff != "" {
		t.Errorf("mapping to an unknown field (-want +got):\n%s", diff)
	}
}
