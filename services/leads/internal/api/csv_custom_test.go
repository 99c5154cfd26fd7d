package api_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/leads/internal/store"
)

// defineCSV gives leads the fields of the CSV tests, listed by name (all
// at position 0): a unique text, a date, a text labelled as a formula, a
// text labelled "Lead Source" (other systems' header of source), a user,
// an enum, a multi_enum, and an email labelled "E-mail" (the built-in
// email's); the last two are headed cf.<name>.
func (e *env) defineCSV() {
	e.t.Helper()
	for _, d := range []map[string]any{
		{"name": "erp_id", "label": "ERP id", "type": "text", "unique": true},
		{"name": "met_on", "label": "Met on", "type": "date"},
		{"name": "motto", "label": "=Motto", "type": "text"},
		{"name": "origin", "label": "Lead Source", "type": "text"},
		{"name": "owner", "label": "Owner", "type": "user"},
		{"name": "tier", "label": "Tier", "type": "enum", "options": []map[string]any{{"value": "gold"}, {"value": "silver"}}},
		{"name": "topics", "label": "Topics", "type": "multi_enum", "options": []map[string]any{{"value": "crm"}, {"value": "bi"}}},
		{"name": "work_email", "label": "E-mail", "type": "email"},
	} {
		e.define(d)
	}
}

// customCSVHeader is the template of defineCSV's fields.
const customCSVHeader = "first_name,last_name,email,phone,company,job_title,source,status,notes,tags," +
	"ERP id,Met on,'=Motto,cf.origin,Owner,Tier,Topics,cf.work_email"

// storedCustom is every lead's email and stored custom_fields, by id.
func (e *env) storedCustom(t *testing.T) map[string]map[string]any {
	t.Helper()
	rows, err := e.store.DB().Query(context.Background(), `SELECT coalesce(email, ''), custom_fields FROM leads ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]map[string]any{}
	for rows.Next() {
		var email string
		var cf map[string]any
		if err := rows.Scan(&email, &cf); err != nil {
			t.Fatal(err)
		}
		out[email] = cf
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// claims lists the unique values claimed, as "name=value".
func (e *env) claims(t *testing.T) []string {
	t.Helper()
	rows, err := e.store.DB().Query(context.Background(), `SELECT name || '=' || value FROM custom_field_unique
		WHERE object = 'leads' ORDER BY name, value`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestCSVCustomFieldsTemplateExport: the template and the export have a
// column per custom field, headed by its label (escaped as a cell is) or
// by cf.<name> where the label folds to a built-in column; the export's
// cells are the values as the import reads them, formula-neutralised; and
// an exported file imports back into the same fields.
func TestCSVCustomFieldsTemplateExport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.defineCSV()
	r := e.do("GET", "/leads/template", e.admin, nil)
	if r.status != 200 || string(r.body) != customCSVHeader+"\n" {
		t.Fatalf("template: %d %q", r.status, r.body)
	}

	e.createLead(map[string]any{"first_name": "Ann", "last_name": "Able", "email": "ann@x.example", "custom_fields": map[string]any{
		"erp_id": "E-1", "met_on": "2026-02-28", "owner": 3, "tier": "gold", "topics": []string{"crm", "bi"},
		"work_email": "Ann@Work.example"}})
	e.createLead(map[string]any{"first_name": "Bo", "last_name": "Bare", "email": "bo@x.example",
		"custom_fields": map[string]any{"motto": "=HYPERLINK(\"evil\")"}})
	r = e.do("GET", "/leads/export?sort_by=created_at", e.admin, nil)
	if r.status != 200 {
		t.Fatalf("export: %d %s", r.status, r.body)
	}
	recs, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
	if err != nil || len(recs) != 3 {
		t.Fatalf("export: %v %q", err, r.body)
	}
	wantHeader := "id," + customCSVHeader + ",created_at,updated_at"
	if got := strings.Join(recs[0], ","); got != wantHeader {
		t.Fatalf("export header\n got %s\nwant %s", got, wantHeader)
	}
	custom := func(rec []string) []string { return rec[11 : len(rec)-2] }
	want := [][]string{
		{"E-1", "2026-02-28", "", "", "3", "gold", "crm,bi", "ann@work.example"},
		{"", "", `'=HYPERLINK("evil")`, "", "", "", "", ""},
	}
	if diff := cmp.Diff(want, [][]string{custom(recs[1]), custom(recs[2])}); diff != "" {
		t.Fatalf("export custom cells (-want +got):\n%s", diff)
	}

	// The exported file imports back: the labels (and cf.work_email) read
	// the fields; id, created_at and updated_at are ignored.
	before := e.storedCustom(t)
	if r := e.do("DELETE", "/leads/"+recs[1][0], e.admin, nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", "/leads/"+recs[2][0], e.admin, nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	r = e.upload(e.user, "file", string(r.body))
	if m := r.json(t); m["imported"] != 2.0 || m["skipped"] != 0.0 ||
		!cmp.Equal(m["ignored_columns"], []any{"id", "created_at", "updated_at"}) {
		t.Fatalf("re-import: %d %s", r.status, r.body)
	}
	before["bo@x.example"]["motto"] = `'=HYPERLINK("evil")` // what the export wrote
	if diff := cmp.Diff(before, e.storedCustom(t)); diff != "" {
		t.Fatalf("re-imported custom fields (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"erp_id=E-1"}, e.claims(t)); diff != "" {
		t.Fatalf("claims (-want +got):\n%s", diff)
	}
}

// customImportFile reads custom fields by label ("Met On" folds to the
// label "Met on"), by cf.<name>, and has a bad cell of each kind, a
// unique value repeated in the file and one a lead holds.
const customImportFile = "First Name,Last Name,Email,ERP id,cf.tier,Met On,Topics,Owner\n" +
	"Ann,Able,ann@x.example,E-1,gold,2026-02-28,\"crm, bi\",3\n" + // row 2
	"Bob,Bad,bob@x.example,E-2,gold,2026-02-30,,\n" + // 3
	"Cat,Cell,cat@x.example,E-3,platinum,,,\n" + // 4
	"Dan,Dup,dan@x.example,E-1,,,,\n" + // 5
	"Eve,Held,eve@x.example,E-0,,,,\n" + // 6
	"Fay,Fine,fay@x.example,,silver,,,\n" + // 7
	"Gus,Ghost,gus@x.example,,,,,999\n" + // 8
	"Hal,Both,not-an-email,,platinum,,,\n" + // 9
	"Ida,Idle,ida@x.example,,,,crm;bi,\n" + // 10
	"Jo,Bad,jo@x.example,E-2,,,,\n" // 11: E-2 is free again (row 3 was refused)

var customImportErrors = []any{
	"Row 3: cf.met_on must be a date in the form YYYY-MM-DD",
	"Row 4: cf.tier must be one of gold, silver",
	"Row 5: duplicate cf.erp_id E-1 (same as row 2)",
	"Row 6: a lead with cf.erp_id E-0 already exists",
	"Row 8: cf.owner must be the id of an existing user",
	"Row 9: email must be a valid email address; cf.tier must be one of gold, silver",
	"Row 10: cf.topics must be one of crm, bi",
}

// TestCSVImportCustomFields: cells are validated by type, each bad one
// reported for its row with the API's message under its column, and the
// row not written; a unique value an earlier row or a lead holds skips
// its row; the others are written with their values, claimed, and their
// lead.created events carry the rendered custom_fields. A dry run answers
// the same and writes nothing.
func TestCSVImportCustomFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.defineCSV()
	e.createLead(map[string]any{"first_name": "Old", "last_name": "Holder", "email": "old@x.example",
		"custom_fields": map[string]any{"erp_id": "E-0"}})

	want := map[string]any{
		"success": true, "imported": 3.0, "skipped": 7.0, "message": "Dry run: would import 3 leads, skipped 7",
		"errors": customImportErrors, "encoding": "UTF-8", "delimiter": ",", "ignored_columns": []any{}, "dry_run": true,
	}
	r := e.uploadForm([2]string{"dry_run", "true"}, [2]string{"file", customImportFile})
	if diff := cmp.Diff(want, r.json(t)); diff != "" {
		t.Fatalf("dry run (-want +got):\n%s", diff)
	}
	if n := e.countRows(`SELECT count(*) FROM leads`); n != 1 || len(e.claims(t)) != 1 {
		t.Fatalf("the dry run wrote: %d leads, claims %v", n, e.claims(t))
	}

	want["message"], want["dry_run"] = "Imported 3 leads, skipped 7", false
	r = e.upload(e.user, "file", customImportFile)
	if diff := cmp.Diff(want, r.json(t)); diff != "" {
		t.Fatalf("import (-want +got):\n%s", diff)
	}
	wantStored := map[string]map[string]any{
		"old@x.example": {"erp_id": "E-0"},
		"ann@x.example": {"erp_id": "E-1", "tier": "gold", "met_on": "2026-02-28", "topics": []any{"crm", "bi"}, "owner": 3.0},
		"fay@x.example": {"tier": "silver"},
		"jo@x.example":  {"erp_id": "E-2"},
	}
	if diff := cmp.Diff(wantStored, e.storedCustom(t)); diff != "" {
		t.Fatalf("stored (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"erp_id=E-0", "erp_id=E-1", "erp_id=E-2"}, e.claims(t)); diff != "" {
		t.Fatalf("claims (-want +got):\n%s", diff)
	}

	// The imported values are claimed: a single write cannot take one.
	wantProblem(t, e.do("POST", "/leads", e.user, map[string]any{"first_name": "Late", "last_name": "Comer",
		"custom_fields": map[string]any{"erp_id": "E-1"}}), 409, "duplicate_value", "custom_fields.erp_id")

	var payload []byte
	if err := e.store.DB().QueryRow(context.Background(), `SELECT payload FROM outbox
		WHERE type = 'lead.created' AND payload->>'email' = 'fay@x.example'`).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	var ev struct {
		CustomFields map[string]any `json:"custom_fields"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	wantEvent := map[string]any{"erp_id": nil, "met_on": nil, "motto": nil, "origin": nil, "owner": nil, "tier": "silver", "topics": nil, "work_email": nil}
	if diff := cmp.Diff(wantEvent, ev.CustomFields); diff != "" {
		t.Fatalf("lead.created custom_fields (-want +got):\n%s", diff)
	}
}

// TestCSVImportCustomMapping: a mapping may target cf.<name>, and an
// unknown target lists the custom columns among the fields.
func TestCSVImportCustomMapping(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.defineCSV()
	const file = "first_name,last_name,email,Customer Level,Legacy\nMo,Map,mo@x.example,silver,x\n"
	r := e.uploadForm([2]string{"mapping", `{"Customer Level":"cf.tier","Legacy":""}`}, [2]string{"file", file})
	if m := r.json(t); m["imported"] != 1.0 || !cmp.Equal(m["ignored_columns"], []any{"Legacy"}) {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	if diff := cmp.Diff(map[string]any{"tier": "silver"}, e.storedCustom(t)["mo@x.example"]); diff != "" {
		t.Fatalf("stored (-want +got):\n%s", diff)
	}
	r = e.uploadForm([2]string{"mapping", `{"Customer Level":"cf.level"}`}, [2]string{"file", file})
	wantExactProblem(t, r, problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"mapping",
		`column "Customer Level" maps to "cf.level", which is not a field (fields: cf.erp_id, cf.met_on, cf.motto, ` +
			`cf.origin, cf.owner, cf.tier, cf.topics, cf.work_email, company, email, first_name, full_name, job_title, last_name, ` +
			`notes, phone, source, status, tags)`}))
}

// TestCSVImportRequiredCustomField: a required field's column missing
// from the file, or empty on a row, refuses the row.
func TestCSVImportRequiredCustomField(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.define(map[string]any{"name": "region", "label": "Region", "type": "text", "required": true})
	r := e.upload(e.user, "file", "first_name,last_name\nA,B\n")
	if m := r.json(t); m["imported"] != 0.0 || !cmp.Equal(m["errors"], []any{"Row 2: cf.region is required"}) {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	r = e.upload(e.user, "file", "first_name,last_name,region\nA,B,\nC,D,North\n")
	if m := r.json(t); m["imported"] != 1.0 || !cmp.Equal(m["errors"], []any{"Row 2: cf.region is required"}) {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
}

// TestCSVImportDefinitionsChanged: rows read with definitions that are no
// longer the installation's are not written.
func TestCSVImportDefinitionsChanged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.define(map[string]any{"name": "erp_id", "label": "ERP id", "type": "text", "unique": true})
	next := func() (store.ImportRow, bool, error) { return store.ImportRow{}, false, nil }
	_, err := e.store.Import(context.Background(), next, store.ImportOptions{Definitions: []customfield.Definition{}})
	var f *fault.Error
	if !errors.As(err, &f) || f.Kind != fault.KindConflict || f.Code != "custom_fields_changed" {
		t.Fatalf("import with stale definitions: %v", err)
	}
}

// TestCSVImportWithoutCustomColumns: with custom fields defined (none
// required; one labelled "Lead Source", a header some files give source),
// every other system's export imports exactly as it does without them:
// the same answer and the same leads, holding no custom values.
func TestCSVImportWithoutCustomColumns(t *testing.T) {
	t.Parallel()
	plain, custom := newEnv(t), newEnv(t)
	custom.defineCSV()
	files, err := filepath.Glob(filepath.Join(exports, "*.csv"))
	if err != nil || len(files) == 0 {
		t.Fatalf("exports: %v %v", files, err)
	}
	type stored struct {
		First, Last, Email, Status, Custom string
	}
	leadsOf := func(e *env) []stored {
		rows, err := e.store.DB().Query(context.Background(), `SELECT first_name, last_name, coalesce(email, ''), status,
			custom_fields::text FROM leads ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []stored
		for rows.Next() {
			var s stored
			if err := rows.Scan(&s.First, &s.Last, &s.Email, &s.Status, &s.Custom); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	for _, f := range files {
		content, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		a, b := plain.upload(plain.user, "file", string(content)), custom.upload(custom.user, "file", string(content))
		if a.status != b.status || !bytes.Equal(a.body, b.body) {
			t.Errorf("%s: without custom fields %d %s\nwith them %d %s", filepath.Base(f), a.status, a.body, b.status, b.body)
		}
	}
	got := leadsOf(custom)
	if diff := cmp.Diff(leadsOf(plain), got); diff != "" || len(got) == 0 {
		t.Fatalf("stored leads (-without +with custom fields):\n%s", diff)
	}
	if got[0].Custom != "{}" {
		t.Fatalf("custom_fields of an imported lead: %s", got[0].Custom)
	}
}

// TestCSVImportTwoUniqueFields: a row skipped for its second unique value
// gives back the first one it claimed, so a later write can take it.
func TestCSVImportTwoUniqueFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.define(map[string]any{"name": "erp_id", "label": "ERP id", "type": "text", "unique": true})
	e.define(map[string]any{"name": "vat", "label": "VAT", "type": "text", "unique": true})
	const file = "first_name,last_name,ERP id,VAT\nA,A,E-1,V-1\nB,B,E-2,V-1\n"
	r := e.upload(e.user, "file", file)
	if m := r.json(t); m["imported"] != 1.0 || !cmp.Equal(m["errors"], []any{"Row 3: duplicate cf.vat V-1 (same as row 2)"}) {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	if diff := cmp.Diff([]string{"erp_id=E-1", "vat=V-1"}, e.claims(t)); diff != "" {
		t.Fatalf("claims (-want +got):\n%s", diff)
	}
	e.createLead(map[string]any{"first_name": "C", "last_name": "C", "custom_fields": map[string]any{"erp_id": "E-2"}})
}

// TestCSVImportUserIdentityAsks: a user only identity knows yet (not the
// directory read model) is accepted, as the API accepts it, but identity
// is asked about at most 100 unknown ids per import: past them an id the
// read model lacks is no user.
func TestCSVImportUserIdentityAsks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.define(map[string]any{"name": "owner", "label": "Owner", "type": "user"})
	e.identity.AddUser(identityapi.DirectoryUser{ID: 5000, Name: "New Hire", Email: "new@example.com", Role: "user", Active: true})
	var file strings.Builder
	file.WriteString("first_name,last_name,Owner\n")
	var want []any
	for i := range 100 {
		fmt.Fprintf(&file, "Made,Up,%d\n", 1001+i)
		want = append(want, fmt.Sprintf("Row %d: cf.owner must be the id of an existing user", i+2))
	}
	file.WriteString("New,Hire,5000\n")
	want = append(want, "Row 102: cf.owner must be the id of an existing user")
	r := e.upload(e.user, "file", file.String())
	if m := r.json(t); m["imported"] != 0.0 || !cmp.Equal(m["errors"], want) {
		t.Fatalf("import past the asks: %d %s", r.status, r.body)
	}
	r = e.upload(e.user, "file", "first_name,last_name,Owner\nNew,Hire,5000\n")
	if m := r.json(t); m["imported"] != 1.0 {
		t.Fatalf("import of a user identity knows: %d %s", r.status, r.body)
	}
}
