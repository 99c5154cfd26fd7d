package api_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/opencrm/crm/pkg/audit/audittest"
	"github.com/opencrm/crm/pkg/contract/identityapi"
)

// wantAudit checks every audit entry written so far.
func (e *env) wantAudit(t *testing.T, want ...identityapi.AuditMessage) {
	t.Helper()
	if diff := cmp.Diff(want, audittest.Entries(t, e.db), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("audit entries (-want +got):\n%s", diff)
	}
}

func leadEntry(actor int64, action, id, details string) identityapi.AuditMessage {
	return identityapi.AuditMessage{Context: "leads", Actor: identityapi.AuditActor{Type: "user", ID: &actor},
		Action: action, Target: &identityapi.AuditTarget{Object: "lead", ID: id}, Details: json.RawMessage(details)}
}

// TestImportAudited: an import records import.ran once, in its
// transaction, with the counts it answered (invalid rows and duplicates
// both skipped), even when every row was skipped; a dry run and a
// rejected file record nothing.
func TestImportAudited(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createLead(map[string]any{"first_name": "Old", "last_name": "Timer", "email": "old@x.example"})
	file := "first_name,last_name,email\nAnn,Able,ann@x.example\n,NoFirst,nf@x.example\nOle,Old,OLD@x.example\nCy,Clean,cy@x.example\n"
	if r := e.uploadForm([2]string{"dry_run", "true"}, [2]string{"file", file}); r.status != http.StatusOK {
		t.Fatalf("dry run: %d %s", r.status, r.body)
	}
	for _, bad := range []string{"first_name,last_name\n", "email\nx@y.example\n"} {
		wantProblem(t, e.upload(e.user, "file", bad), http.StatusUnprocessableEntity, "validation_failed", "file")
	}
	e.wantAudit(t)

	if r := e.upload(e.user, "file", file); r.status != http.StatusOK || r.json(t)["imported"] != 2.0 || r.json(t)["skipped"] != 2.0 {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	if r := e.upload(e.user, "file", file); r.status != http.StatusOK || r.json(t)["imported"] != 0.0 {
		t.Fatalf("second import: %d %s", r.status, r.body)
	}
	e.wantAudit(t,
		leadEntry(1, "import.ran", "", `{"imported":2,"object":"lead","skipped":2}`),
		leadEntry(1, "import.ran", "", `{"imported":0,"object":"lead","skipped":4}`))
}

// TestExportAudited: an export records export.ran with its query
// parameters and the exact number of rows sent (a note holding a line
// break and quotes is one row); a refused export records nothing.
func TestExportAudited(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createLead(map[string]any{"first_name": "Ann", "last_name": "Able", "notes": "two\n\"quoted\"\nlines"})
	e.createLead(map[string]any{"first_name": "Bo", "last_name": "Bell"})
	e.createLead(map[string]any{"first_name": "Cy", "last_name": "Cole", "status": "contacted"})
	wantProblem(t, e.do("GET", "/leads/export?sort_by=nope", e.admin, nil), http.StatusUnprocessableEntity, "validation_failed", "sort_by")
	e.wantAudit(t)

	r := e.do("GET", "/leads/export?status=new&sort_by=created_at", e.admin, nil)
	if r.status != http.StatusOK {
		t.Fatalf("export: %d %s", r.status, r.body)
	}
	if r = e.do("GET", "/leads/export?status=qualified", e.admin, nil); r.status != http.StatusOK {
		t.Fatalf("empty export: %d %s", r.status, r.body)
	}
	e.wantAudit(t,
		leadEntry(2, "export.ran", "", `{"filters":{"sort_by":"created_at","status":"new"},"object":"lead","rows":2}`),
		leadEntry(2, "export.ran", "", `{"filters":{"status":"qualified"},"object":"lead","rows":0}`))
}

// TestDeleteAudited: a delete records record.deleted in its transaction,
// one entry per lead a batch deletes (none for an id not found, none
// again when the batch's answer is replayed); a delete of a lead that is
// not there, or a batch refused whole, records nothing.
func TestDeleteAudited(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.createLead(map[string]any{"first_name": "Ann", "last_name": "Able"})
	b := e.createLead(map[string]any{"first_name": "Bo", "last_name": "Bell"})
	c := e.createLead(map[string]any{"first_name": "Cy", "last_name": "Cole"})
	wantProblem(t, e.do("DELETE", "/leads/999999", e.admin, nil), http.StatusNotFound, "not_found")
	wantProblem(t, e.batch("delete", map[string]any{"ids": []int64{b, b}}, ""), http.StatusUnprocessableEntity, "validation_failed", "inputs[1].id")
	e.wantAudit(t)

	if r := e.do("DELETE", path("/leads/{id}", a), e.admin, nil); r.status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	wantProblem(t, e.do("DELETE", path("/leads/{id}", a), e.admin, nil), http.StatusNotFound, "not_found")
	for range 2 { // the second is the first's answer, replayed
		if got := statuses(t, e.batch("delete", map[string]any{"ids": []int64{b, 999999, c}}, "del-1")); len(got) != 3 {
			t.Fatalf("batch delete: %v", got)
		}
	}
	id := func(n int64) string { return strconv.FormatInt(n, 10) }
	e.wantAudit(t,
		leadEntry(2, "record.deleted", id(a), `{"object":"lead"}`),
		leadEntry(1, "record.deleted", id(b), `{"object":"lead"}`),
		leadEntry(1, "record.deleted", id(c), `{"object":"lead"}`))
}
