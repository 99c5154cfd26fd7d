package api_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestImportFlagsRowsAnExistingLeadHas: a row whose email (in any case)
// a lead already has is skipped, not made a second lead, and listed in
// duplicates with the oldest such lead, in a dry run too (the preview
// before the import); a row repeating an earlier row of the file is only
// in errors. Nothing else changes the answer: an import without such rows
// has no duplicates.
func TestImportFlagsRowsAnExistingLeadHas(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	oldest := e.createLead(map[string]any{"first_name": "Ola", "last_name": "Old", "email": "ola@x.example"})
	e.createLead(map[string]any{"first_name": "Ola", "last_name": "Again", "email": "OLA@x.example"})
	kim := e.createLead(map[string]any{"first_name": "Kim", "last_name": "Known", "email": "kim@x.example"})
	const file = "first_name,last_name,email\n" +
		"New,Person,new@x.example\n" + // 2
		"Ola,Imported,Ola@X.example\n" + // 3: two leads have it: the oldest is named
		"New,Twice,NEW@x.example\n" + // 4: row 2's email
		"Kim,Imported,kim@x.example\n" // 5
	want := func(dryRun bool, verb string) string {
		return `{"success":true,"message":"` + verb + ` 1 leads, skipped 3","imported":1,"skipped":3,` +
			`"errors":["Row 3: a lead with email Ola@X.example already exists","Row 4: duplicate email NEW@x.example (same as row 2)",` +
			`"Row 5: a lead with email kim@x.example already exists"],"encoding":"UTF-8","delimiter":",","ignored_columns":[],` +
			`"dry_run":` + map[bool]string{true: "true", false: "false"}[dryRun] + `,` +
			`"duplicates":[{"row":3,"email":"Ola@X.example","duplicate_of":` + strconv.FormatInt(oldest, 10) + `},` +
			`{"row":5,"email":"kim@x.example","duplicate_of":` + strconv.FormatInt(kim, 10) + `}]}` + "\n"
	}
	for _, tc := range []struct {
		name   string
		fields [][2]string
		want   string
	}{
		{"dry run", [][2]string{{"dry_run", "true"}, {"file", file}}, want(true, "Dry run: would import")},
		{"import", [][2]string{{"file", file}}, want(false, "Imported")},
	} {
		r := e.uploadForm(tc.fields...)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.name, r.status, r.body)
		}
		if diff := cmp.Diff(tc.want, string(r.body)); diff != "" {
			t.Errorf("%s answer (-want +got):\n%s", tc.name, diff)
		}
	}
	names, _ := listIDs(t, e, "")
	if diff := cmp.Diff([]string{"Kim", "New", "Ola", "Ola"}, names); diff != "" {
		t.Errorf("leads after the import (-want +got):\n%s", diff)
	}
	r := e.uploadForm([2]string{"file", "first_name,last_name,email\nFresh,One,fresh@x.example\n"})
	const clean = `{"success":true,"message":"Imported 1 leads, skipped 0","imported":1,"skipped":0,"errors":[],` +
		`"encoding":"UTF-8","delimiter":",","ignored_columns":[],"dry_run":false}` + "\n"
	if r.status != http.StatusOK || string(r.body) != clean {
		t.Errorf("clean import: %d %s, want 200 %s", r.status, r.body, clean)
	}
}
