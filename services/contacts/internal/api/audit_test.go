package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/audit/audittest"
	"github.com/opencrm/crm/pkg/contract/identityapi"
)

// TestExportImportDeleteAreAudited: an export (its filters and row
// count), an import (its counts; a dry run records nothing) and a delete
// of a contact or a company each record their entry on crm:audit, as the
// admin's (a batch delete too); a refused request records nothing.
func TestExportImportDeleteAreAudited(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	csv := []byte("first_name,last_name,email,notes\nAda,Lovelace,ada@example.com,\"two\nlines\"\nAlan,Turing,alan@example.com,\nBad,,bad@example.com,\n")
	if r := e.upload(t, e.admin, "file", "people.csv", csv); r.Status != http.StatusOK {
		t.Fatalf("import: %d %s", r.Status, r.Raw)
	}
	if r := e.uploadForm(t, field{name: "dry_run", value: "true"}, field{name: "file", value: string(csv), file: true}); r.Status != http.StatusOK {
		t.Fatalf("dry run: %d %s", r.Status, r.Raw)
	}
	if r := e.do(t, http.MethodGet, "/contacts/export?status=active&search=a", e.admin, nil); r.Status != http.StatusOK {
		t.Fatalf("export: %d %s", r.Status, r.Raw)
	}
	if r := e.do(t, http.MethodGet, "/contacts/export?status=gone", e.admin, nil); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("bad export: %d %s", r.Status, r.Raw)
	}
	var id int64
	if err := e.db.QueryRow(context.Background(), `SELECT id FROM contacts WHERE email = 'alan@example.com'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	path := "/contacts/" + strconv.FormatInt(id, 10)
	if r := e.do(t, http.MethodDelete, path, e.admin, nil); r.Status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.Status, r.Raw)
	}
	if r := e.do(t, http.MethodDelete, path, e.admin, nil); r.Status != http.StatusNotFound {
		t.Fatalf("second delete: %d %s", r.Status, r.Raw)
	}

	// A batch delete records each record it deletes, in its transaction.
	var ada int64
	if err := e.db.QueryRow(context.Background(), `SELECT id FROM contacts WHERE email = 'ada@example.com'`).Scan(&ada); err != nil {
		t.Fatal(err)
	}
	if r := e.do(t, http.MethodPost, "/contacts/batch/delete", e.admin, map[string]any{"ids": []int64{ada}}); r.Status != http.StatusOK {
		t.Fatalf("batch delete: %d %s", r.Status, r.Raw)
	}

	admin := int64(adminID)
	actor := identityapi.AuditActor{Type: "user", ID: &admin}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	want := []identityapi.AuditMessage{
		{Context: "contacts", Actor: actor, Action: "import.ran", Target: &identityapi.AuditTarget{Object: "contact"},
			Details: raw(`{"imported":2,"object":"contact","skipped":1}`)},
		{Context: "contacts", Actor: actor, Action: "export.ran", Target: &identityapi.AuditTarget{Object: "contact"},
			Details: raw(`{"filters":{"search":"text","status":"active"},"object":"contact","rows":2}`)},
		{Context: "contacts", Actor: actor, Action: "record.deleted", Target: &identityapi.AuditTarget{Object: "contact", ID: strconv.FormatInt(id, 10)},
			Details: raw(`{"object":"contact"}`)},
		{Context: "contacts", Actor: actor, Action: "record.deleted", Target: &identityapi.AuditTarget{Object: "contact", ID: strconv.FormatInt(ada, 10)},
			Details: raw(`{"object":"contact"}`)},
	}
	got := audittest.Entries(t, e.db)
	for i := range got {
		got[i].Actor.Name = "" // the test issuer's
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit entries (-want +got):\n%s", diff)
	}
}
