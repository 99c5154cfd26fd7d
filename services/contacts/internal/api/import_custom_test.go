package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/services/contacts/internal/store"
)

// define adds custom fields of contacts as an admin would.
func (e *env) define(t testing.TB, fields ...propertyapi.PropertyInput) {
	t.Helper()
	st := customfield.Store{DB: e.db, Stream: store.Stream}
	obj := customfield.Object{Name: propertyapi.Contacts, Table: "contacts"}
	for _, f := range fields {
		if _, err := st.Create(context.Background(), obj, f); err != nil {
			t.Fatalf("define %s: %v", f.Name, err)
		}
	}
}

// customOf is the custom_fields column of the contact with last name last.
func (e *env) customOf(t testing.TB, last string) map[string]any {
	t.Helper()
	var raw []byte
	if err := e.db.QueryRow(context.Background(), `SELECT custom_fields FROM contacts WHERE last_name = $1`, last).Scan(&raw); err != nil {
		t.Fatalf("contact %s: %v", last, err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// csvFields are the custom fields the CSV tests define: one column each,
// in position order.
var csvFields = []propertyapi.PropertyInput{
	{Name: "renewal_date", Label: "Renewal Date", Type: customfield.Date, Position: 1},
	{Name: "tier", Label: "Tier", Type: customfield.Enum, Options: []propertyapi.Option{{Value: "gold"}, {Value: "silver"}}, Position: 2},
	{Name: "member_no", Label: "Member No.", Type: customfield.Text, Unique: true, Position: 3},
	{Name: "account_manager", Label: "Account Manager", Type: customfield.User, Position: 4},
	{Name: "motto", Label: "=Motto", Type: customfield.Text, Position: 5},
}

// TestCSVCustomFields: the template and the export head one column per
// custom field with its label (a formula-like label escaped); the import
// reads a column by its label in any case or by cf.<name>, parses each
// cell by type, and skips a row with a bad cell, a unique value another
// row or contact holds, or a user that does not exist, with its reason,
// writing nothing of it; a dry run answers the same and writes nothing.
func TestCSVCustomFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.define(t, csvFields...)
	held := id(t, e.do(t, "POST", "/contacts", e.admin, map[string]any{"first_name": "Held", "last_name": "Value"}))
	if _, err := e.db.Exec(context.Background(), `UPDATE contacts SET custom_fields = '{"member_no":"M-9"}' WHERE id = $1;`, held); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Exec(context.Background(), `INSERT INTO custom_field_unique VALUES ('contacts', 'member_no', 'M-9', $1)`, held); err != nil {
		t.Fatal(err)
	}

	r := e.do(t, "GET", "/contacts/template", e.admin, nil)
	wantStatus(t, r, 200)
	want := "first_name,last_name,email,phone,mobile,job_title,company_name,address_street,address_city,address_state,address_zip,address_country,notes,tags,status,source," +
		"Renewal Date,Tier,Member No.,Account Manager,'=Motto\n"
	if string(r.Raw) != want {
		t.Errorf("template\n got %q\nwant %q", r.Raw, want)
	}

	csv := "first_name,last_name,email,RENEWAL DATE,cf.tier,member no.,Account Manager,cf.motto\n" +
		"Ada,Lovelace,ada@x.test,2026-03-01,gold,M-1,2,=1+1\n" +
		"Bad,Date,,2026-02-30,,,,\n" +
		"Bad,Tier,,,platinum,,,\n" +
		"Dup,InFile,,,,M-1,,\n" +
		"Dup,Stored,,,,M-9,,\n" +
		"No,User,,,,,999,\n" +
		"Plain,Row,plain@x.test,,,,,\n"
	errs := []any{
		"Row 3: cf.renewal_date must be a date in the form YYYY-MM-DD",
		"Row 4: cf.tier must be one of gold, silver",
		"Row 5: duplicate cf.member_no M-1 (already in row 2)",
		"Row 6: duplicate cf.member_no M-9 (already exists)",
		"Row 7: cf.account_manager must be the id of an existing user",
	}
	answer := func(dry bool, message string) map[string]any {
		return map[string]any{"success": true, "imported": 2.0, "skipped": 5.0, "message": message, "errors": errs,
			"encoding": "UTF-8", "delimiter": ",", "ignored_columns": []any{}, "dry_run": dry}
	}

	r = e.uploadForm(t, field{name: "dry_run", value: "true"}, file(csv))
	wantStatus(t, r, 200)
	if diff := cmp.Diff(answer(true, "Dry run: would import 2 contacts, skipped 5"), r.Body); diff != "" {
		t.Errorf("dry run (-want +got):\n%s", diff)
	}
	if n := e.count(t, `SELECT count(*) FROM contacts`) + e.count(t, `SELECT count(*) FROM custom_field_unique`); n != 2 {
		t.Fatalf("a dry run wrote: %d contacts and claims, want 2", n)
	}

	r = e.upload(t, e.admin, "file", "contacts.csv", []byte(csv))
	wantStatus(t, r, 200)
	if diff := cmp.Diff(answer(false, "Imported 2 contacts, skipped 5"), r.Body); diff != "" {
		t.Errorf("import (-want +got):\n%s", diff)
	}
	wantAda := map[string]any{"renewal_date": "2026-03-01", "tier": "gold", "member_no": "M-1", "account_manager": 2.0, "motto": "=1+1"}
	if diff := cmp.Diff(wantAda, e.customOf(t, "Lovelace")); diff != "" {
		t.Errorf("ada's custom fields (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{}, e.customOf(t, "Row")); diff != "" {
		t.Errorf("a row without values (-want +got):\n%s", diff)
	}
	if n := e.count(t, `SELECT count(*) FROM contacts WHERE last_name IN ('Date', 'Tier', 'InFile', 'Stored', 'User')`); n != 0 {
		t.Errorf("%d skipped rows written", n)
	}
	if n := e.count(t, `SELECT count(*) FROM custom_field_unique u JOIN contacts c ON c.id = u.record_id
		WHERE (u.value, c.last_name) IN (('M-1', 'Lovelace'), ('M-9', 'Value'))`); n != 2 || e.count(t, `SELECT count(*) FROM custom_field_unique`) != 2 {
		t.Errorf("claims: %d of the 2 expected", n)
	}
	// The imported value is now an external id: a second file holding it
	// is refused for that row.
	r = e.upload(t, e.admin, "file", "again.csv", []byte("first_name,last_name,Member No.\nAda,Again,M-1\n"))
	wantStatus(t, r, 200)
	if diff := cmp.Diff([]any{"Row 2: duplicate cf.member_no M-1 (already exists)"}, r.Body["errors"]); diff != "" {
		t.Errorf("second import (-want +got):\n%s", diff)
	}

	r = e.do(t, "GET", "/contacts/export?search=lovelace", e.admin, nil)
	wantStatus(t, r, 200)
	lines := strings.Split(strings.TrimSuffix(string(r.Raw), "\n"), "\n")
	wantHeader := "id,first_name,last_name,email,phone,mobile,job_title,company_name,address_street,address_city,address_state,address_zip,address_country,notes,tags,status,source," +
		"Renewal Date,Tier,Member No.,Account Manager,'=Motto,created_at,updated_at"
	if len(lines) != 2 || lines[0] != wantHeader {
		t.Fatalf("export %q", r.Raw)
	}
	ada := id(t, e.do(t, "GET", "/contacts?search=lovelace", e.admin, nil).firstOf(t))
	if want := fmt.Sprintf("%d,Ada,Lovelace,ada@x.test,,,,,,,,,,,,active,,2026-03-01,gold,M-1,2,'=1+1,", ada); !strings.HasPrefix(lines[1], want) {
		t.Errorf("export row\n got %q\nwant %q...", lines[1], want)
	}

	// The export imports back into the same fields (an escaped cell keeps
	// its apostrophe, as built-in ones do).
	e2 := newEnv(t)
	e2.define(t, csvFields...)
	r = e2.upload(t, e2.admin, "file", "export.csv", r.Raw)
	wantStatus(t, r, 200)
	if r.Body["imported"] != 1.0 || fmt.Sprint(r.Body["ignored_columns"]) != "[id created_at updated_at]" {
		t.Fatalf("re-import %s", r.Raw)
	}
	wantAda["motto"] = "'=1+1"
	if diff := cmp.Diff(wantAda, e2.customOf(t, "Lovelace")); diff != "" {
		t.Errorf("re-imported custom fields (-want +got):\n%s", diff)
	}
}

// firstOf is the first record of a list answer, as a single answer.
func (r resp) firstOf(t testing.TB) resp {
	t.Helper()
	list, ok := r.Body["data"].([]any)
	if !ok || len(list) == 0 {
		t.Fatalf("empty list %s", r.Raw)
	}
	return resp{Status: r.Status, Body: map[string]any{"data": list[0]}}
}

// TestImportMappingToCustomFields: another CRM's columns we have no
// built-in field for go to custom fields through mapping; its other
// columns import as they do without custom fields.
func TestImportMappingToCustomFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.define(t,
		propertyapi.PropertyInput{Name: "hs_lead_status", Label: "HubSpot lead status", Type: customfield.Enum,
			Options: []propertyapi.Option{{Value: "In Progress"}, {Value: "Open Deal"}}},
		propertyapi.PropertyInput{Name: "lifecycle", Label: "Lifecycle", Type: customfield.Text})
	raw, err := os.ReadFile(filepath.Join(exports, "hubspot-contacts.csv"))
	if err != nil {
		t.Fatal(err)
	}
	r := e.uploadForm(t, field{name: "mapping", value: `{"Lead Status":"cf.hs_lead_status","Lifecycle Stage":"cf.lifecycle"}`}, file(string(raw)))
	wantStatus(t, r, 200)
	want := map[string]any{"success": true, "imported": 2.0, "skipped": 0.0, "message": "Imported 2 contacts, skipped 0", "errors": []any{},
		"encoding": "UTF-8 with BOM", "delimiter": ",", "dry_run": false,
		"ignored_columns": []any{"Record ID", "Contact owner", "Create Date", "Last Activity Date"}}
	if diff := cmp.Diff(want, r.Body); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	for last, want := range map[string]map[string]any{
		"Lovelace": {"hs_lead_status": "In Progress", "lifecycle": "Lead"},
		"Turing":   {"hs_lead_status": "Open Deal", "lifecycle": "Subscriber"},
	} {
		if diff := cmp.Diff(want, e.customOf(t, last)); diff != "" {
			t.Errorf("%s's custom fields (-want +got):\n%s", last, diff)
		}
	}
	if diff := cmp.Diff(hubspotAda, e.storedContact(t, "ada@hubspot.example")); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}

	// A mapping to a field that is not defined names it.
	r = e.uploadForm(t, field{name: "mapping", value: `{"Lead Status":"cf.nope"}`}, file(string(raw)))
	wantExact(t, r, 422, invalid("mapping", `column "Lead Status" maps to "cf.nope", which is not a field (fields: `+
		`address_city, address_country, address_state, address_street, address_zip, cf.hs_lead_status, cf.lifecycle, `+
		`company_name, email, first_name, full_name, job_title, last_name, mobile, notes, phone, source, status, tags)`))

}

// TestImportUniqueClaims: a row skipped for one unique field keeps no
// claim on another's value, so that value stays free; the claims a kept
// row makes hold the values in their stored form.
func TestImportUniqueClaims(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.define(t,
		propertyapi.PropertyInput{Name: "a_code", Label: "A code", Type: customfield.Text, Unique: true},
		propertyapi.PropertyInput{Name: "b_code", Label: "B code", Type: customfield.Number, Unique: true})
	held := id(t, e.do(t, "POST", "/contacts", e.admin, map[string]any{"first_name": "Held", "last_name": "Value"}))
	if _, err := e.db.Exec(context.Background(), `UPDATE contacts SET custom_fields = '{"b_code":"7"}' WHERE id = $1;`, held); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Exec(context.Background(), `INSERT INTO custom_field_unique VALUES ('contacts', 'b_code', '7', $1)`, held); err != nil {
		t.Fatal(err)
	}
	r := e.upload(t, e.admin, "file", "codes.csv", []byte("first_name,last_name,A code,B code\nSkip,Me,A-1,7.000\nKeep,Me,A-2,8.50\n"))
	wantStatus(t, r, 200)
	if diff := cmp.Diff([]any{"Row 2: duplicate cf.b_code 7 (already exists)"}, r.Body["errors"]); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	rows, err := e.db.Query(context.Background(), `SELECT u.name || '=' || u.value || ' ' || c.first_name
		FROM custom_field_unique u JOIN contacts c ON c.id = u.record_id ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a_code=A-2 Keep", "b_code=7 Held", "b_code=8.5 Keep"}, claims); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
}
