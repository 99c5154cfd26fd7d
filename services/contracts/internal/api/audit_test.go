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

func contractsEntry(actor int64, action, object string, id int64, details string) identityapi.AuditMessage {
	return identityapi.AuditMessage{Context: "contracts", Actor: identityapi.AuditActor{Type: "user", ID: &actor},
		Action: action, Target: &identityapi.AuditTarget{Object: object, ID: strconv.FormatInt(id, 10)},
		Details: json.RawMessage(details)}
}

// TestTemplateChangesAudited: a template's create, update and delete
// each record their entry (its name; for an update the fields it changed,
// without values) in the change's transaction, as the admin's; an update
// refused by validation, one that changes nothing, and a delete refused
// (in use, not found) record nothing.
func TestTemplateChangesAudited(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wantProblem(t, e.do(t, http.MethodPost, "/contract-templates", e.admin, map[string]any{"name": "", "content": "<p>x</p>"}),
		http.StatusUnprocessableEntity, "validation_failed", "name")
	id := e.createTemplate(t, map[string]any{"name": "Standard"})
	used := e.createTemplate(t, map[string]any{"name": "Used"})
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	e.createContract(t, 1, used, nil)
	path := "/contract-templates/" + strconv.FormatInt(id, 10)

	wantProblem(t, e.do(t, http.MethodPut, path, e.admin, map[string]any{"number_prefix": "no spaces", "name": "Renamed"}),
		http.StatusUnprocessableEntity, "validation_failed", "number_prefix")
	if r := e.do(t, http.MethodPut, path, e.admin, map[string]any{"name": "Renamed", "number_prefix": "LIC", "footer_right": "{{page}}"}); r.status != http.StatusOK {
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodPut, path, e.admin, map[string]any{"number_prefix": "LIC"}); r.status != http.StatusOK {
		t.Fatalf("update changing nothing: %d %s", r.status, r.body)
	}
	wantProblem(t, e.do(t, http.MethodPut, "/contract-templates/999999", e.admin, map[string]any{"name": "X"}),
		http.StatusNotFound, "not_found")
	wantProblem(t, e.do(t, http.MethodDelete, "/contract-templates/"+strconv.FormatInt(used, 10), e.admin, nil),
		http.StatusConflict, "template_in_use")
	wantProblem(t, e.do(t, http.MethodDelete, "/contract-templates/999999", e.admin, nil), http.StatusNotFound, "not_found")
	if r := e.do(t, http.MethodDelete, path, e.admin, nil); r.status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	wantProblem(t, e.do(t, http.MethodDelete, path, e.admin, nil), http.StatusNotFound, "not_found")

	e.wantAudit(t,
		contractsEntry(1, "template.created", "template", id, `{"name":"Standard"}`),
		contractsEntry(1, "template.created", "template", used, `{"name":"Used"}`),
		contractsEntry(1, "template.updated", "template", id,
			`{"changes":[{"field":"name"},{"field":"number_prefix"},{"field":"footer_right"}],"name":"Renamed"}`),
		contractsEntry(1, "template.deleted", "template", id, `{"name":"Renamed"}`))
}

// TestContractDeleteAudited: a contract's delete records record.deleted
// in its transaction, as the deleting user's; a delete of a contract that
// is not there, or one refused in the deleting transaction (the contract
// has a signed copy), records nothing.
func TestContractDeleteAudited(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	id := idOf(e.createContract(t, 1, tpl, nil))
	path := "/contracts/" + strconv.FormatInt(id, 10)
	wantProblem(t, e.do(t, http.MethodDelete, "/contracts/999999", e.user, nil), http.StatusNotFound, "not_found")
	if r := e.uploadPDF(t, id, e.user, "signed.pdf", pdfBytes("signed")); r.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	wantProblem(t, e.do(t, http.MethodDelete, path, e.user, nil), http.StatusConflict, "conflict")
	if r := e.do(t, http.MethodDelete, path+"/executed", e.admin, nil); r.status != http.StatusOK {
		t.Fatalf("admin deletes the copy: %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodDelete, path, e.user, nil); r.status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	wantProblem(t, e.do(t, http.MethodDelete, path, e.user, nil), http.StatusNotFound, "not_found")

	e.wantAudit(t,
		contractsEntry(1, "template.created", "template", tpl, `{"name":"Standard licence"}`),
		contractsEntry(2, "record.deleted", "contract", id, `{"object":"contract"}`))
}
