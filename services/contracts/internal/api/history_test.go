package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/problem/problemtest"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
	"github.com/opencrm/crm/services/contracts/internal/expiry"
)

// historyPage reads one page of history at path (a record's route or the
// admin route) as token.
func (e *env) historyPage(t *testing.T, path, token string) historyapi.HistoryPage {
	t.Helper()
	r := e.do(t, http.MethodGet, path, token, nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	var page historyapi.HistoryPage
	if err := json.Unmarshal(r.body, &page); err != nil {
		t.Fatal(err)
	}
	return page
}

// historyLines is a page's entries, newest first, as "<action> <via>
// <actor type>:<actor id> <field>=<from>→<to> ...", prefixed by the object
// of a record that belongs to object (a contract's note). An entry made
// by a request carries its request id, the system's none.
func historyLines(t *testing.T, page historyapi.HistoryPage, object string) []string {
	t.Helper()
	out := []string{}
	for _, en := range page.Data {
		who := en.Actor.Type
		if en.Actor.ID != nil {
			who += fmt.Sprint(":", *en.Actor.ID)
		}
		line := fmt.Sprintf("%s %s %s", en.Action, en.Via, who)
		if en.Object != object {
			line = en.Object + " " + line
		}
		for _, c := range en.Changes {
			line += fmt.Sprintf(" %s=%s→%s", c.Field, plain(t, c.From), plain(t, c.To))
		}
		if system := en.Actor.Type == historyapi.ActorSystem; system != (en.RequestID == "") {
			t.Errorf("entry %d (%s): request id %q", en.ID, line, en.RequestID)
		}
		out = append(out, line)
	}
	return out
}

// plain is a JSON value as written, without the wire's HTML escapes
// (\u003c for <), an object's members in name order.
func plain(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("history value %s: %v", raw, err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// contractHistory is contract id's whole history through its route.
func (e *env) contractHistory(t *testing.T, id int64, token string) []string {
	t.Helper()
	return historyLines(t, e.historyPage(t, fmt.Sprintf("/contracts/%d/history?per_page=100", id), token), "contract")
}

// wantExactProblem asserts a problem answer and its detail and field
// errors, messages included.
func wantExactProblem(t *testing.T, r response, status int, code, detail string, errs ...problem.FieldError) {
	t.Helper()
	b := problemtest.Want(t, r.status, r.header, r.body, status, code)
	if b.Detail != detail {
		t.Errorf("detail = %q, want %q", b.Detail, detail)
	}
	if diff := cmp.Diff(errs, b.Errors, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// historyTemplate is a template whose generated content is short enough
// to read in an entry.
func (e *env) historyTemplate(t *testing.T) int64 {
	t.Helper()
	r := e.do(t, http.MethodPost, "/contract-templates", e.admin, map[string]any{
		"name": "Short", "content": "<p>{{contract.title}}</p>", "number_prefix": "HIS"})
	if r.status != http.StatusCreated {
		t.Fatalf("create template: %d %s", r.status, r.body)
	}
	return idOf(r.data(t))
}

// TestContractHistory: a contract's create, update, signed copy (its name
// and size, never its bytes) and delete are recorded with who and how; a
// note added to it is listed in its history; the route is as visible as
// the contract, and a deleted contract's history stays for admins.
func TestContractHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.historyTemplate(t)
	c := e.createContract(t, 1, tpl, map[string]any{"start_date": "2026-01-01", "end_date": "2026-12-31"})
	id := idOf(c)
	number := c["contract_number"].(string)
	path := fmt.Sprint("/contracts/", id)

	if r := e.do(t, http.MethodPut, path, e.user, map[string]any{"deal_id": 1, "template_id": tpl,
		"title": "Licence agreement", "partner_ref": "PO-7", "auto_renew": true}); r.status != http.StatusOK {
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodPost, path+"/notes", e.user, map[string]any{"content": "Sent for signature"}); r.status != http.StatusCreated {
		t.Fatalf("note: %d %s", r.status, r.body)
	}
	pdf := pdfBytes("signed")
	if r := e.uploadPDF(t, id, e.user, "signed.pdf", pdf); r.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodDelete, path+"/executed", e.admin, nil); r.status != http.StatusOK {
		t.Fatalf("delete signed copy: %d %s", r.status, r.body)
	}

	copyOf := fmt.Sprintf(`{"filename":"signed.pdf","size":%d}`, len(pdf))
	want := []string{
		`updated api user:1 status="executed"→"active"`,
		`updated api user:1 executed_file=` + copyOf + `→null`,
		`updated api user:2 status="draft"→"executed"`,
		`updated api user:2 executed_file=null→` + copyOf,
		fmt.Sprintf(`note created api user:2 content=null→"Sent for signature" parent_id=null→%d parent_type=null→"contract"`, id),
		`updated api user:2 auto_renew=false→true partner_ref=null→"PO-7"`,
		fmt.Sprintf(`created api user:2 auto_renew=null→false company_id=null→10 content=null→"<p>Licence agreement</p>" `+
			`contract_number=null→%q deal_id=null→1 effective_date=null→"2026-01-01" end_date=null→"2026-12-31" `+
			`start_date=null→"2026-01-01" status=null→"draft" template_id=null→%d term_months=null→36 `+
			`termination_date=null→"2026-12-31" title=null→"Licence agreement"`, number, tpl),
	}
	if diff := cmp.Diff(want, e.contractHistory(t, id, e.user)); diff != "" {
		t.Errorf("contract history (-want +got):\n%s", diff)
	}

	// Paging: newest first, the cursor continuing where a page ended.
	first := e.historyPage(t, path+"/history?per_page=2", e.user)
	if len(first.Data) != 2 || !first.HasMore || first.NextBefore == nil {
		t.Fatalf("first page: %+v", first)
	}
	next := e.historyPage(t, fmt.Sprintf("%s/history?per_page=100&before=%d", path, *first.NextBefore), e.user)
	if diff := cmp.Diff(want[2:], historyLines(t, next, "contract")); diff != "" {
		t.Errorf("second page (-want +got):\n%s", diff)
	}

	// Bad input, unknown contracts and callers without a token.
	perPage := problem.FieldError{Field: "per_page", Message: "must be an integer between 1 and 100"}
	wantExactProblem(t, e.do(t, http.MethodGet, path+"/history?per_page=0", e.user, nil), 422,
		"validation_failed", "one or more fields are invalid", perPage)
	wantExactProblem(t, e.do(t, http.MethodGet, path+"/history?per_page=101", e.user, nil), 422,
		"validation_failed", "one or more fields are invalid", perPage)
	wantExactProblem(t, e.do(t, http.MethodGet, path+"/history?before=x", e.user, nil), 422,
		"validation_failed", "one or more fields are invalid",
		problem.FieldError{Field: "before", Message: "must be an entry id (the next_before of a page)"})
	wantExactProblem(t, e.do(t, http.MethodGet, "/contracts/987654/history", e.user, nil), 404,
		"not_found", "contract not found")
	wantProblem(t, e.do(t, http.MethodGet, path+"/history", "", nil), 401, "unauthenticated")

	// A deleted contract: its route answers as the contract does (404),
	// an admin reads its whole history, its note's deletion too.
	if r := e.do(t, http.MethodDelete, path, e.user, nil); r.status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	wantExactProblem(t, e.do(t, http.MethodGet, path+"/history", e.user, nil), 404, "not_found", "contract not found")
	admin := historyLines(t, e.historyPage(t, fmt.Sprintf("/history?object=contract&id=%d&per_page=100", id), e.admin), "contract")
	wantDeleted := []string{
		fmt.Sprintf(`note deleted api user:2 content="Sent for signature"→null parent_id=%d→null parent_type="contract"→null`, id),
		fmt.Sprintf(`deleted api user:2 auto_renew=true→null company_id=10→null content="<p>Licence agreement</p>"→null `+
			`contract_number=%q→null deal_id=1→null effective_date="2026-01-01"→null end_date="2026-12-31"→null `+
			`partner_ref="PO-7"→null start_date="2026-01-01"→null status="active"→null template_id=%d→null `+
			`term_months=36→null termination_date="2026-12-31"→null title="Licence agreement"→null`, number, tpl),
	}
	if diff := cmp.Diff(append(wantDeleted, want...), admin); diff != "" {
		t.Errorf("admin history of the deleted contract (-want +got):\n%s", diff)
	}
	wantProblem(t, e.do(t, http.MethodGet, fmt.Sprintf("/history?object=contract&id=%d", id), e.user, nil), 403, "forbidden")
}

// TestTemplateHistory: a template's create, update and delete are recorded
// (an admin reads them through the admin history route; templates have no
// route of their own).
func TestTemplateHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tpl := e.historyTemplate(t)
	path := fmt.Sprint("/contract-templates/", tpl)
	if r := e.do(t, http.MethodPut, path, e.admin, map[string]any{"name": "Shorter", "default_term_months": 12,
		"footer_center": "Page {{page}} of {{pages}}"}); r.status != http.StatusOK {
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodDelete, path, e.admin, nil); r.status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	want := []string{
		`deleted api user:1 content="<p>{{contract.title}}</p>"→null default_term_months=12→null ` +
			`footer_center="Page {{page}} of {{pages}}"→null footer_left=""→null footer_right=""→null ` +
			`header_center=""→null header_left=""→null header_right=""→null name="Shorter"→null number_prefix="HIS"→null`,
		`updated api user:1 default_term_months=36→12 footer_center=""→"Page {{page}} of {{pages}}" name="Short"→"Shorter"`,
		`created api user:1 content=null→"<p>{{contract.title}}</p>" default_term_months=null→36 footer_center=null→"" ` +
			`footer_left=null→"" footer_right=null→"" header_center=null→"" header_left=null→"" header_right=null→"" ` +
			`name=null→"Short" number_prefix=null→"HIS"`,
	}
	admin := fmt.Sprintf("/history?object=template&id=%d&per_page=100", tpl)
	if diff := cmp.Diff(want, historyLines(t, e.historyPage(t, admin, e.admin), "template")); diff != "" {
		t.Errorf("template history (-want +got):\n%s", diff)
	}
	wantProblem(t, e.do(t, http.MethodGet, admin, e.user, nil), 403, "forbidden")
	wantExactProblem(t, e.do(t, http.MethodGet, "/history?object=template&id=987654", e.admin, nil), 404,
		"not_found", "template not found")
	wantProblem(t, e.do(t, http.MethodGet, "/history?object=contact&id=1", e.admin, nil), 422, "validation_failed", "object")
}

// TestExpiryHistory: the expiry job's changes (an expiry's status, a
// renewal's termination date, and their system notes) are the system's,
// via expiry, without a request id.
func TestExpiryHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.historyTemplate(t)
	past := map[string]any{"start_date": "2019-01-31", "end_date": "2020-01-31"}
	expiring := idOf(setStatus(t, e, e.createContract(t, 1, tpl, past), "active"))
	renewing := idOf(setStatus(t, e, e.createContract(t, 1, tpl, map[string]any{
		"start_date": "2019-01-31", "end_date": "2020-01-31", "auto_renew": true, "term_months": 12}), "active"))

	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	job, err := expiry.New(rdb, expiry.Config{Queue: "test-contracts-expiry-" + randHex(6), Cron: "0 0 1 1 *"},
		e.svc, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	today := contracts.Day(time.Now())
	payload, err := json.Marshal(map[string]string{"day": contracts.FormatDate(today)})
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Handle(context.Background(), asynq.NewTask(expiry.TaskType, payload)); err != nil {
		t.Fatal(err)
	}

	want := []string{
		fmt.Sprintf(`note created expiry system content=null→%q parent_id=null→%d parent_type=null→"contract"`,
			contracts.ExpiryNote("2020-01-31"), expiring),
		`updated expiry system status="active"→"expired"`,
		`updated api user:2 status="draft"→"active"`,
	}
	if diff := cmp.Diff(want, e.contractHistory(t, expiring, e.user)[:3]); diff != "" {
		t.Errorf("expired contract's history (-want +got):\n%s", diff)
	}
	term, terms := contracts.RenewedTermination(time.Date(2020, 1, 31, 0, 0, 0, 0, time.UTC),
		time.Date(2020, 1, 31, 0, 0, 0, 0, time.UTC), 12, today)
	to := contracts.FormatDate(term)
	want = []string{
		fmt.Sprintf(`note created expiry system content=null→%q parent_id=null→%d parent_type=null→"contract"`,
			contracts.RenewalNote("2020-01-31", to, 12, terms), renewing),
		fmt.Sprintf(`updated expiry system termination_date="2020-01-31"→%q`, to),
		`updated api user:2 status="draft"→"active"`,
	}
	if diff := cmp.Diff(want, e.contractHistory(t, renewing, e.user)[:3]); diff != "" {
		t.Errorf("renewed contract's history (-want +got):\n%s", diff)
	}
}
