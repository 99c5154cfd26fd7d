package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/problem/problemtest"
)

// historyPage reads one page of a history route as token.
func (e *env) historyPage(t *testing.T, url, token string) historyapi.HistoryPage {
	t.Helper()
	r := e.do(http.MethodGet, url, token, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, r.Status, r.Body)
	}
	var page historyapi.HistoryPage
	if err := json.Unmarshal(r.Body, &page); err != nil {
		t.Fatal(err)
	}
	return page
}

// history reads a deal's whole history through the API, newest first, as
// "<action> <via> <actor type>:<actor id> <field>=<from>→<to> ...",
// prefixed by "quote <id>" for an entry of one of its quotes.
func (e *env) history(t *testing.T, dealID int64, token string) []string {
	t.Helper()
	page := e.historyPage(t, path("/deals/%d/history?per_page=100", dealID), token)
	if page.HasMore {
		t.Fatalf("deal %d: more than 100 entries", dealID)
	}
	return lines(t, page.Data, "deal", dealID)
}

// lines renders entries as history does; an entry of another record than
// object id is prefixed by its object and id.
func lines(t *testing.T, entries []historyapi.HistoryEntry, object string, id int64) []string {
	t.Helper()
	out := []string{}
	for _, en := range entries {
		who := en.Actor.Type
		if en.Actor.ID != nil {
			who += fmt.Sprint(":", *en.Actor.ID)
		}
		line := fmt.Sprintf("%s %s %s", en.Action, en.Via, who)
		if en.Object != object || en.RecordID != id {
			line = fmt.Sprintf("%s %d %s", en.Object, en.RecordID, line)
		}
		for _, c := range en.Changes {
			line += fmt.Sprintf(" %s=%s→%s", c.Field, c.From, c.To)
		}
		if en.RequestID == "" && en.Actor.Type != historyapi.ActorSystem {
			t.Errorf("entry %d (%s) without a request id", en.ID, line)
		}
		out = append(out, line)
	}
	return out
}

// TestDealHistory: a deal's writes (value, stage, a batch) and its quotes'
// (create, update with new lines, the decline another acceptance makes,
// delete) are recorded with who and how, in the deal's history newest
// first; money keeps its exact digits; the history is as visible as the
// deal, and kept for an admin once the deal is deleted.
func TestDealHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.define()
	st := e.stages()
	prospecting, proposal, won := st["Prospecting"].ID, st["Proposal"].ID, st["Closed Won"].ID

	d := e.createDeal(map[string]any{"title": "Acme renewal", "value": "1500.50", "company_id": 100, "contact_id": 500,
		"expected_close_date": "2026-12-31", "source_lead_id": 42, "custom_fields": map[string]any{"tier": "gold"}})
	e.data(e.do("PUT", path("/deals/%d", d.ID), e.user, map[string]any{"title": "Acme renewal", "value": "2000.25", "stage_id": proposal}), http.StatusOK, nil)
	// A save that changes nothing tracked (the same values) writes no entry.
	e.data(e.do("PUT", path("/deals/%d", d.ID), e.user, map[string]any{"title": "Acme renewal"}), http.StatusOK, nil)

	q := e.createQuote(d.ID, map[string]any{"tax_rate": "10", "line_items": items([3]any{"Seats", 2, "750.25"})})
	e.data(e.do("PUT", path("/quotes/%d", q.ID), e.admin, map[string]any{"status": "accepted",
		"line_items": items([3]any{"Seats", 2, "750.25"}, [3]any{"Setup", "1.5", "100"})}), http.StatusOK, nil)
	// Accepting a second quote declines the first: the first quote's
	// change is the acceptance's.
	q2 := e.createQuote(d.ID, map[string]any{"status": "accepted", "line_items": items([3]any{"Support", 1, "99.99"})})
	e.data(e.do("PUT", path("/quotes/%d", q.ID), e.user, map[string]any{"valid_until": "2026-06-30"}), http.StatusOK, nil)
	wantStatus(t, e.do("DELETE", path("/quotes/%d", q2.ID), e.user, nil), http.StatusOK)

	r, _ := e.batch("update", map[string]any{"inputs": []any{
		map[string]any{"id": d.ID, "title": "Acme renewal 2027", "custom_fields": map[string]any{"tier": "silver", "erp_id": "E-9"}}}})
	wantStatus(t, r, http.StatusOK)
	e.data(e.do("PUT", path("/deals/%d", d.ID), e.admin, map[string]any{"title": "Acme renewal 2027", "stage_id": won}), http.StatusOK, nil)

	qid, q2id := q.ID, q2.ID
	quote := func(id int64, s string) string { return fmt.Sprintf("quote %d %s", id, s) }
	want := []string{
		fmt.Sprintf(`updated api user:1 stage_id=%d→%d status="open"→"won"`, proposal, won),
		`updated batch user:2 custom_fields.erp_id=null→"E-9" custom_fields.tier="gold"→"silver" title="Acme renewal"→"Acme renewal 2027"`,
		quote(q2id, fmt.Sprintf(`deleted api user:2 currency="USD"→null deal_id=%d→null `, d.ID)+
			`line_items=[{"amount":99.9900,"quantity":1.0000,"unit_price":99.9900,"description":"Support"}]→null `+
			`quote_number="`+q2.QuoteNumber+`"→null status="accepted"→null subtotal=99.9900→null tax=0.0000→null `+
			`tax_rate=0.0000→null total=99.9900→null`),
		quote(qid, `updated api user:2 valid_until=null→"2026-06-30"`),
		quote(q2id, fmt.Sprintf(`created api user:2 currency=null→"USD" deal_id=null→%d `, d.ID)+
			`line_items=null→[{"amount":99.9900,"quantity":1.0000,"unit_price":99.9900,"description":"Support"}] `+
			`quote_number=null→"`+q2.QuoteNumber+`" status=null→"accepted" subtotal=null→99.9900 tax=null→0.0000 `+
			`tax_rate=null→0.0000 total=null→99.9900`),
		quote(qid, `updated api user:2 status="accepted"→"declined"`),
		quote(qid, `updated api user:1 `+
			`line_items=[{"amount":1500.5000,"quantity":2.0000,"unit_price":750.2500,"description":"Seats"}]→`+
			`[{"amount":1500.5000,"quantity":2.0000,"unit_price":750.2500,"description":"Seats"},`+
			`{"amount":150.0000,"quantity":1.5000,"unit_price":100.0000,"description":"Setup"}] `+
			`status="draft"→"accepted" subtotal=1500.5000→1650.5000 tax=150.0500→165.0500 total=1650.5500→1815.5500`),
		quote(qid, fmt.Sprintf(`created api user:2 currency=null→"USD" deal_id=null→%d `, d.ID)+
			`line_items=null→[{"amount":1500.5000,"quantity":2.0000,"unit_price":750.2500,"description":"Seats"}] `+
			`quote_number=null→"`+q.QuoteNumber+`" status=null→"draft" subtotal=null→1500.5000 tax=null→150.0500 `+
			`tax_rate=null→10.0000 total=null→1650.5500`),
		fmt.Sprintf(`updated api user:2 stage_id=%d→%d value=1500.5000→2000.2500`, prospecting, proposal),
		fmt.Sprintf(`created api user:2 assigned_to=null→%d company_id=null→100 contact_id=null→500 currency=null→"USD" `, userID) +
			`custom_fields.tier=null→"gold" expected_close_date=null→"2026-12-31" source_lead_id=null→42 ` +
			fmt.Sprintf(`stage_id=null→%d status=null→"open" title=null→"Acme renewal" value=null→1500.5000`, prospecting),
	}
	if diff := cmp.Diff(want, e.history(t, d.ID, e.user)); diff != "" {
		t.Errorf("deal history (-want +got):\n%s", diff)
	}
	// As visible as the deal: another team's user reads the deal, so its
	// history too.
	if diff := cmp.Diff(want, e.history(t, d.ID, e.other)); diff != "" {
		t.Errorf("deal history read by another team (-want +got):\n%s", diff)
	}
	// Paging: newest first from a cursor.
	page := e.historyPage(t, path("/deals/%d/history?per_page=2", d.ID), e.user)
	if !page.HasMore || len(page.Data) != 2 || page.NextBefore == nil || *page.NextBefore != page.Data[1].ID {
		t.Fatalf("first page: %+v", page)
	}
	next := e.historyPage(t, path("/deals/%d/history?per_page=2&before=%d", d.ID, *page.NextBefore), e.user)
	if diff := cmp.Diff(want[2:4], lines(t, next.Data, "deal", d.ID)); diff != "" || !next.HasMore {
		t.Errorf("second page (has_more %v) (-want +got):\n%s", next.HasMore, diff)
	}

	// Deleting the deal deletes its quote with it (both recorded); the
	// route then answers as the deal's GET does, and an admin still reads
	// both through GET /history.
	wantStatus(t, e.do("DELETE", path("/deals/%d", d.ID), e.user, nil), http.StatusOK)
	wantProblem(t, e.do("GET", path("/deals/%d/history", d.ID), e.user, nil), http.StatusNotFound, "not_found")
	admin := e.historyPage(t, path("/history?object=deal&id=%d&per_page=2", d.ID), e.admin)
	got := lines(t, admin.Data, "deal", d.ID)
	sortedDeletes := []string{
		fmt.Sprintf(`deleted api user:2 assigned_to=%d→null company_id=100→null contact_id=500→null currency="USD"→null `, userID) +
			`custom_fields.erp_id="E-9"→null custom_fields.tier="silver"→null expected_close_date="2026-12-31"→null ` +
			fmt.Sprintf(`source_lead_id=42→null stage_id=%d→null status="won"→null title="Acme renewal 2027"→null value=2000.2500→null`, won),
		quote(qid, fmt.Sprintf(`deleted api user:2 currency="USD"→null deal_id=%d→null `, d.ID)+
			`line_items=[{"amount":1500.5000,"quantity":2.0000,"unit_price":750.2500,"description":"Seats"},`+
			`{"amount":150.0000,"quantity":1.5000,"unit_price":100.0000,"description":"Setup"}]→null `+
			`quote_number="`+q.QuoteNumber+`"→null status="declined"→null subtotal=1650.5000→null tax=165.0500→null `+
			`tax_rate=10.0000→null total=1815.5500→null valid_until="2026-06-30"→null`),
	}
	if diff := cmp.Diff(sortedDeletes, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("deletion entries (-want +got):\n%s", diff)
	}
	quotePage := e.historyPage(t, path("/history?object=quote&id=%d&per_page=100", qid), e.admin)
	if n := len(quotePage.Data); n != 5 || quotePage.HasMore {
		t.Errorf("admin history of quote %d: %d entries, want 5", qid, n)
	}
	wantProblem(t, e.do("GET", path("/history?object=deal&id=%d", d.ID), e.user, nil), http.StatusForbidden, "forbidden")
	wantProblem(t, e.do("GET", "/history?object=deal&id=987654", e.admin, nil), http.StatusNotFound, "not_found")
	wantProblem(t, e.do("GET", "/history?object=contact&id=1", e.admin, nil), http.StatusUnprocessableEntity, "validation_failed", "object")
}

// TestDealHistoryErrors: the route's refusals, with their exact problem
// bodies.
func TestDealHistoryErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.createDeal(map[string]any{"title": "Errors"})
	base := path("/deals/%d/history", d.ID)
	invalid := func(field, message string) problem.Body {
		return problem.Body{Type: "/docs/problems#validation_failed", Title: "Unprocessable Entity", Status: http.StatusUnprocessableEntity,
			Detail: "one or more fields are invalid", Code: "validation_failed",
			Errors: []problem.FieldError{{Field: field, Message: message}}}
	}
	for _, tc := range []struct {
		query string
		want  problem.Body
	}{
		{"?per_page=0", invalid("per_page", "must be an integer between 1 and 100")},
		{"?per_page=101", invalid("per_page", "must be an integer between 1 and 100")},
		{"?before=x", invalid("before", "must be an entry id (the next_before of a page)")},
	} {
		r := e.do(http.MethodGet, base+tc.query, e.user, nil)
		field := tc.want.Errors[0].Field
		got := problemtest.Want(t, r.Status, r.Header, r.Body, http.StatusUnprocessableEntity, "validation_failed", field)
		if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(problem.Body{}, "RequestID")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.query, diff)
		}
	}
	r := e.do(http.MethodGet, "/deals/987654/history", e.user, nil)
	got := problemtest.Want(t, r.Status, r.Header, r.Body, http.StatusNotFound, "not_found")
	want := problem.Body{Type: "/docs/problems#not_found", Title: "Not Found", Status: http.StatusNotFound, Detail: "deal not found", Code: "not_found"}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(problem.Body{}, "RequestID")); diff != "" {
		t.Errorf("a deal that never existed (-want +got):\n%s", diff)
	}
	wantProblem(t, e.do(http.MethodGet, base, "", nil), http.StatusUnauthorized, "unauthenticated")
}

// TestInternalCreateHistory: a deal created through the internal API by a
// lead's qualification is recorded as the qualifying user's, via
// qualification, from the X-Crm-Actor and X-Crm-Via headers; without them
// it is the system's.
func TestInternalCreateHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := e.stages()
	body := map[string]any{"title": "Qualified", "value": "1500.50", "company_id": 100, "assigned_to": userID, "source_lead_id": 7}
	r := e.internal("POST", dealsapi.PathDeals, body, "Idempotency-Key", "lead-7-deal",
		"X-Crm-Actor", `{"type":"user","id":2,"name":"Uma User"}`, "X-Crm-Via", historyapi.ViaQualification)
	var d dealJSON
	e.data(r, http.StatusCreated, &d)
	page := e.historyPage(t, path("/deals/%d/history", d.ID), e.user)
	want := []historyapi.HistoryEntry{{Object: "deal", RecordID: d.ID, Action: historyapi.Created,
		Actor: historyapi.HistoryActor{Type: historyapi.ActorUser, ID: ptr[int64](userID), Name: "Uma User"},
		Via:   historyapi.ViaQualification,
		Changes: []historyapi.HistoryChange{
			{Field: "assigned_to", From: json.RawMessage("null"), To: json.RawMessage(fmt.Sprint(userID))},
			{Field: "company_id", From: json.RawMessage("null"), To: json.RawMessage("100")},
			{Field: "currency", From: json.RawMessage("null"), To: json.RawMessage(`"USD"`)},
			{Field: "source_lead_id", From: json.RawMessage("null"), To: json.RawMessage("7")},
			{Field: "stage_id", From: json.RawMessage("null"), To: json.RawMessage(fmt.Sprint(st["Prospecting"].ID))},
			{Field: "status", From: json.RawMessage("null"), To: json.RawMessage(`"open"`)},
			{Field: "title", From: json.RawMessage("null"), To: json.RawMessage(`"Qualified"`)},
			{Field: "value", From: json.RawMessage("null"), To: json.RawMessage("1500.5000")},
		}}}
	if diff := cmp.Diff(want, page.Data, cmpopts.IgnoreFields(historyapi.HistoryEntry{}, "ID", "At", "RequestID")); diff != "" {
		t.Errorf("qualification's deal (-want +got):\n%s", diff)
	}
	// A replay of the key creates nothing, so records nothing.
	e.data(e.internal("POST", dealsapi.PathDeals, body, "Idempotency-Key", "lead-7-deal",
		"X-Crm-Actor", `{"type":"user","id":2,"name":"Uma User"}`, "X-Crm-Via", historyapi.ViaQualification), http.StatusCreated, nil)
	if n := len(e.historyPage(t, path("/deals/%d/history", d.ID), e.user).Data); n != 1 {
		t.Errorf("%d entries after the replay, want 1", n)
	}

	// Without the headers an internal call acts for nobody: the system's.
	e.data(e.internal("POST", dealsapi.PathDeals, map[string]any{"title": "Unsigned"}, "Idempotency-Key", "k-2"), http.StatusCreated, &d)
	got := lines(t, e.historyPage(t, path("/deals/%d/history", d.ID), e.user).Data, "deal", d.ID)
	wantLines := []string{fmt.Sprintf(`created system system currency=null→"USD" stage_id=null→%d status=null→"open" title=null→"Unsigned" value=null→0.0000`,
		st["Prospecting"].ID)}
	if diff := cmp.Diff(wantLines, got); diff != "" {
		t.Errorf("internal create without headers (-want +got):\n%s", diff)
	}
}

// TestCompanyRenameLeavesNoHistory: the company name a deal copies is
// refreshed from contacts' events without an entry (the company's own
// history records the rename).
func TestCompanyRenameLeavesNoHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.createDeal(map[string]any{"title": "Renamed", "company_id": 100})
	ev := outbox.Event{ID: 1, Type: "company.updated", AggregateID: "100",
		Data: json.RawMessage(`{"id":100,"name":"Acme Corp","updated_at":"2026-02-01T00:00:00.000000Z"}`)}
	if err := e.store.HandleContactsEvent(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	var got dealJSON
	e.data(e.do("GET", path("/deals/%d", d.ID), e.user, nil), http.StatusOK, &got)
	if got.CompanyName == nil || *got.CompanyName != "Acme Corp" {
		t.Fatalf("company_name = %v, want Acme Corp", got.CompanyName)
	}
	page := e.historyPage(t, path("/deals/%d/history", d.ID), e.user)
	if len(page.Data) != 1 || page.Data[0].Action != historyapi.Created {
		t.Errorf("history after the rename: %+v", page.Data)
	}
}

// wantStatus asserts a status.
func wantStatus(t *testing.T, r resp, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
}
