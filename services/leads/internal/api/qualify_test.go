package api_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

func TestQualify(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createLead(map[string]any{"first_name": "Jane", "last_name": "Doe", "email": "jane@acme.example",
		"company": "Acme, Inc.", "assigned_to": 1, "source": "web"})

	r := e.do("POST", path("/leads/{id}/qualify", id), e.user, map[string]any{
		"create_company": true, "create_deal": true, "deal_value": "1500.50", "deal_stage_id": 2,
	})
	if r.status != 200 {
		t.Fatalf("qualify: %d %s", r.status, r.body)
	}
	m := r.json(t)
	if m["success"] != true || m["contact_id"] == nil || m["company_id"] == nil || m["deal_id"] == nil {
		t.Fatalf("qualify body: %s", r.body)
	}
	companyID, contactID, dealID := m["company_id"].(float64), m["contact_id"].(float64), m["deal_id"].(float64)

	// The contact is linked to the company; the deal to both, named after the company.
	if got := e.contacts.Contact(int64(contactID))["company_id"]; got != companyID {
		t.Fatalf("contact company_id = %v, want %v", got, companyID)
	}
	deal := e.deals.fake.Deal(int64(dealID))
	want := map[string]any{"id": int64(dealID), "title": "Acme, Inc. deal", "value": "1500.5", "stage_id": 2.0,
		"company_id": companyID, "contact_id": contactID, "assigned_to": 1.0, "source_lead_id": float64(id),
		"custom_fields": map[string]any{}}
	if diff := cmp.Diff(want, deal); diff != "" {
		t.Fatalf("deal body (-want +got):\n%s", diff)
	}

	lead := e.do("GET", path("/leads/{id}", id), e.user, nil).json(t)["data"].(map[string]any)
	if lead["status"] != "qualified" || lead["qualified_at"] == nil || lead["contact_id"] != contactID ||
		lead["company_id"] != companyID || lead["deal_id"] != dealID {
		t.Fatalf("lead after qualify: %v", lead)
	}

	// Twice → 409 with the existing ids.
	p := wantProblem(t, e.do("POST", path("/leads/{id}/qualify", id), e.user, map[string]any{"create_deal": true}), 409, "already_qualified")
	if p["contact_id"] != contactID || p["company_id"] != companyID || p["deal_id"] != dealID {
		t.Fatalf("409 lacks ids: %v", p)
	}
	if c, co := e.contacts.Counts(); c != 1 || co != 1 || e.deals.fake.Count() != 1 {
		t.Fatalf("created %d contacts, %d companies, %d deals", c, co, e.deals.fake.Count())
	}
}

func TestQualifyMinimalAndReuse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// No body at all: only a contact.
	id := e.createLead(map[string]any{"first_name": "Solo", "last_name": "Person"})
	req := e.do("POST", path("/leads/{id}/qualify", id), e.user, nil)
	if req.status != 200 {
		t.Fatalf("qualify without body: %d %s", req.status, req.body)
	}
	m := req.json(t)
	if m["contact_id"] == nil || m["company_id"] != nil || m["deal_id"] != nil {
		t.Fatalf("minimal qualify: %s", req.body)
	}
	existingContact := int64(m["contact_id"].(float64))

	// Reuse an existing contact and company; deal named after the person.
	co := e.do("POST", path("/leads/{id}/qualify", e.createLead(map[string]any{"first_name": "Has", "last_name": "Company", "company": "Globex"})),
		e.user, map[string]any{"create_company": true}).json(t)
	companyID := co["company_id"].(float64)

	id2 := e.createLead(map[string]any{"first_name": "Re", "last_name": "Use"})
	r := e.do("POST", path("/leads/{id}/qualify", id2), e.user, map[string]any{
		"contact_id": existingContact, "company_id": companyID, "create_company": true, "create_deal": true})
	if r.status != 200 {
		t.Fatalf("reuse: %d %s", r.status, r.body)
	}
	m = r.json(t)
	if m["contact_id"] != float64(existingContact) || m["company_id"] != companyID {
		t.Fatalf("reuse ids: %s", r.body)
	}
	if title := e.deals.fake.Deal(int64(m["deal_id"].(float64)))["title"]; title != "Re Use deal" {
		t.Fatalf("deal title = %v", title)
	}
	if c, co := e.contacts.Counts(); c != 2 || co != 1 {
		t.Fatalf("contacts %d companies %d", c, co)
	}
}

func TestQualifyBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	noCompany := e.createLead(map[string]any{"first_name": "No", "last_name": "Company"})
	withCompany := e.createLead(map[string]any{"first_name": "With", "last_name": "Company", "company": "Initech"})
	for _, tc := range []struct {
		name   string
		id     int64
		body   any
		status int
		code   string
		fields []string
	}{
		{"create_company without name", noCompany, map[string]any{"create_company": true}, 422, "validation_failed", []string{"create_company"}},
		{"negative deal_value", withCompany, map[string]any{"create_deal": true, "deal_value": -1}, 422, "validation_failed", []string{"deal_value"}},
		{"non-numeric deal_value", withCompany, map[string]any{"create_deal": true, "deal_value": "lots"}, 422, "validation_failed", []string{"deal_value"}},
		{"bool of wrong type", withCompany, map[string]any{"create_deal": "yes"}, 422, "validation_failed", []string{"create_deal"}},
		{"unknown deal_stage_id", withCompany, map[string]any{"create_deal": true, "deal_stage_id": 99}, 422, "validation_failed", []string{"deal_stage_id"}},
		{"zero deal_stage_id", withCompany, map[string]any{"create_deal": true, "deal_stage_id": 0}, 422, "validation_failed", []string{"deal_stage_id"}},
		{"unknown contact_id", noCompany, map[string]any{"contact_id": 424242}, 422, "validation_failed", []string{"contact_id"}},
		{"unknown company_id", noCompany, map[string]any{"company_id": 424242}, 422, "validation_failed", []string{"company_id"}},
		{"malformed body", noCompany, `{"create_deal":`, 400, "malformed_json", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, e.do("POST", path("/leads/{id}/qualify", tc.id), e.user, tc.body), tc.status, tc.code, tc.fields...)
		})
	}
	// The stage error left the lead unqualified; a corrected retry succeeds
	// and reuses the contact and company the failed attempt created.
	r := e.do("POST", path("/leads/{id}/qualify", withCompany), e.user, map[string]any{"create_deal": true, "deal_stage_id": 3, "create_company": true})
	if r.status != 200 {
		t.Fatalf("corrected retry: %d %s", r.status, r.body)
	}
	if c, co := e.contacts.Counts(); c != 1 || co != 1 {
		t.Fatalf("contacts %d companies %d", c, co)
	}
	if e.deals.fake.Count() != 1 {
		t.Fatalf("deals = %d", e.deals.fake.Count())
	}
}

// TestQualifySagaRecovers stops deals in the middle of a qualification
// (after the company and contact were created): the answer is 503 and the
// lead stays unqualified; after deals is back, a retry finishes with
// exactly one contact, one company and one deal.
func TestQualifySagaRecovers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createLead(map[string]any{"first_name": "Sam", "last_name": "Saga", "company": "Umbrella"})
	body := map[string]any{"create_company": true, "create_deal": true, "deal_name": "Big one", "deal_value": 10}

	e.deals.stop()
	wantProblem(t, e.do("POST", path("/leads/{id}/qualify", id), e.user, body), http.StatusServiceUnavailable, "upstream_unavailable")
	lead := e.do("GET", path("/leads/{id}", id), e.user, nil).json(t)["data"].(map[string]any)
	if lead["status"] != "new" || lead["contact_id"] != nil {
		t.Fatalf("lead after failed attempt: %v", lead)
	}
	if c, co := e.contacts.Counts(); c != 1 || co != 1 {
		t.Fatalf("first attempt created %d contacts, %d companies", c, co)
	}

	e.deals.restart()
	r := e.do("POST", path("/leads/{id}/qualify", id), e.user, body)
	if r.status != 200 {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
	if c, co := e.contacts.Counts(); c != 1 || co != 1 || e.deals.fake.Count() != 1 {
		t.Fatalf("after retry: %d contacts, %d companies, %d deals; want 1 each", c, co, e.deals.fake.Count())
	}
	m := r.json(t)
	if m["data"].(map[string]any)["status"] != "qualified" || e.deals.fake.Deal(int64(m["deal_id"].(float64)))["title"] != "Big one" {
		t.Fatalf("retry body: %s", r.body)
	}
}

func TestDisqualify(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createLead(map[string]any{"first_name": "D", "last_name": "Q"})
	r := e.do("PUT", path("/leads/{id}/disqualify", id), e.user, map[string]any{"reason": "  no budget "})
	if r.status != 200 {
		t.Fatalf("disqualify: %d %s", r.status, r.body)
	}
	l := r.json(t)["data"].(map[string]any)
	if l["status"] != "disqualified" || l["disqualify_reason"] != "no budget" {
		t.Fatalf("disqualified lead: %v", l)
	}
	// Without a body at all.
	r = e.do("PUT", path("/leads/{id}/disqualify", e.createLead(map[string]any{"first_name": "N", "last_name": "B"})), e.user, nil)
	if r.status != 200 || r.json(t)["data"].(map[string]any)["disqualify_reason"] != nil {
		t.Fatalf("disqualify without body: %d %s", r.status, r.body)
	}
}

// TestDisqualifyFromAnyState: a lead in any state moves to disqualified
// on PUT /leads/{id}/disqualify. The answer is 200 with the lead: status and reason change, everything else stays, so a
// qualified lead keeps contact_id, company_id, deal_id and qualified_at as
// history. GET and the lead.disqualified event carry the same record.
func TestDisqualifyFromAnyState(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	qualify := func(t *testing.T, id int64) {
		r := e.do("POST", path("/leads/{id}/qualify", id), e.user, map[string]any{"create_company": true, "create_deal": true})
		if r.status != http.StatusOK {
			t.Fatalf("qualify: %d %s", r.status, r.body)
		}
	}
	disqualify := func(t *testing.T, id int64) {
		r := e.do("PUT", path("/leads/{id}/disqualify", id), e.user, map[string]any{"reason": "first reason"})
		if r.status != http.StatusOK {
			t.Fatalf("disqualify: %d %s", r.status, r.body)
		}
	}
	for _, tc := range []struct {
		name      string
		setup     func(t *testing.T, id int64)
		body      any
		reason    any
		qualified bool // the lead carries a qualification's ids
	}{
		{name: "new", body: map[string]any{"reason": " no budget "}, reason: "no budget"},
		{name: "contacted", setup: func(t *testing.T, id int64) {
			r := e.do("PUT", path("/leads/{id}", id), e.user, map[string]any{"first_name": "Dee", "last_name": "Queue", "status": "contacted"})
			if r.status != http.StatusOK {
				t.Fatalf("PUT: %d %s", r.status, r.body)
			}
		}, body: map[string]any{"reason": "went silent"}, reason: "went silent"},
		{name: "qualified", setup: qualify, body: map[string]any{"reason": "deal fell through"}, reason: "deal fell through", qualified: true},
		{name: "qualified, no body", setup: qualify, reason: nil, qualified: true},
		{name: "disqualified", setup: disqualify, body: map[string]any{"reason": "second reason"}, reason: "second reason"},
		{name: "qualified then disqualified", setup: func(t *testing.T, id int64) { qualify(t, id); disqualify(t, id) },
			body: map[string]any{"reason": ""}, reason: nil, qualified: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := e.createLead(map[string]any{"first_name": "Dee", "last_name": "Queue", "company": "Acme " + tc.name})
			if tc.setup != nil {
				tc.setup(t, id)
			}
			before := e.do("GET", path("/leads/{id}", id), e.user, nil).json(t)["data"].(map[string]any)
			if hasIDs := before["qualified_at"] != nil && before["contact_id"] != nil && before["company_id"] != nil &&
				before["deal_id"] != nil; hasIDs != tc.qualified {
				t.Fatalf("lead before: qualification ids present = %v, want %v: %v", hasIDs, tc.qualified, before)
			}

			r := e.do("PUT", path("/leads/{id}/disqualify", id), e.user, tc.body)
			if r.status != http.StatusOK {
				t.Fatalf("disqualify: %d %s", r.status, r.body)
			}
			got := r.json(t)
			lead := maps.Clone(before)
			lead["status"], lead["disqualify_reason"] = "disqualified", tc.reason
			updated, _ := got["data"].(map[string]any)["updated_at"].(string)
			if updated < before["updated_at"].(string) {
				t.Errorf("updated_at went back: %s < %s", updated, before["updated_at"])
			}
			lead["updated_at"] = updated
			want := map[string]any{"success": true, "message": "Lead disqualified", "data": lead}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("disqualify answer (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(lead, e.do("GET", path("/leads/{id}", id), e.user, nil).json(t)["data"]); diff != "" {
				t.Errorf("GET after disqualify (-want +got):\n%s", diff)
			}
			var typ string
			var payload []byte
			if err := e.store.DB().QueryRow(context.Background(), `SELECT type, payload FROM outbox
				WHERE stream = $1 AND aggregate_id = $2 ORDER BY id DESC LIMIT 1`,
				outbox.Stream("leads"), strconv.FormatInt(id, 10)).Scan(&typ, &payload); err != nil {
				t.Fatal(err)
			}
			var data map[string]any
			if err := json.Unmarshal(payload, &data); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]any{"type": "lead.disqualified", "data": lead},
				map[string]any{"type": typ, "data": data}); diff != "" {
				t.Errorf("last event (-want +got):\n%s", diff)
			}
		})
	}
}

// TestQualifyDisqualifiedLead: POST /leads/{id}/qualify runs from any
// state, so a disqualified lead can be qualified. One qualified
// before keeps its saga: qualifying it again answers the same ids and
// creates nothing more.
func TestQualifyDisqualifiedLead(t *testing.T) {
	t.Parallel()
	body := map[string]any{"create_company": true, "create_deal": true}
	for _, tc := range []struct {
		name          string
		qualifiedOnce bool
	}{
		{"never qualified", false},
		{"qualified before", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			id := e.createLead(map[string]any{"first_name": "Re", "last_name": "Qualify", "company": "Hooli"})
			var first map[string]any
			if tc.qualifiedOnce {
				r := e.do("POST", path("/leads/{id}/qualify", id), e.user, body)
				if r.status != http.StatusOK {
					t.Fatalf("first qualify: %d %s", r.status, r.body)
				}
				first = pick(r.json(t), "contact_id", "company_id", "deal_id")
			}
			if r := e.do("PUT", path("/leads/{id}/disqualify", id), e.user, map[string]any{"reason": "x"}); r.status != http.StatusOK {
				t.Fatalf("disqualify: %d %s", r.status, r.body)
			}
			r := e.do("POST", path("/leads/{id}/qualify", id), e.user, body)
			if r.status != http.StatusOK {
				t.Fatalf("qualify: %d %s", r.status, r.body)
			}
			ids := pick(r.json(t), "contact_id", "company_id", "deal_id")
			for k, v := range ids {
				if v == nil {
					t.Fatalf("qualify answer lacks %s: %s", k, r.body)
				}
			}
			if first != nil {
				if diff := cmp.Diff(first, ids); diff != "" {
					t.Errorf("ids of the second qualification (-first +second):\n%s", diff)
				}
			}
			lead := e.do("GET", path("/leads/{id}", id), e.user, nil).json(t)["data"].(map[string]any)
			want := map[string]any{"status": "qualified", "contact_id": ids["contact_id"], "company_id": ids["company_id"], "deal_id": ids["deal_id"]}
			if diff := cmp.Diff(want, pick(lead, "status", "contact_id", "company_id", "deal_id")); diff != "" {
				t.Errorf("lead after qualify (-want +got):\n%s", diff)
			}
			contacts, companies := e.contacts.Counts()
			if diff := cmp.Diff([3]int{1, 1, 1}, [3]int{contacts, companies, e.deals.fake.Count()}); diff != "" {
				t.Errorf("contacts, companies, deals created (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, q := range []string{"/leads/match-company", "/leads/match-company?company=", "/leads/match-contact?email=%20"} {
		r := e.do("GET", q, e.user, nil)
		if r.status != 200 || string(r.body) != "{\"data\":[],\"success\":true}\n" {
			t.Fatalf("%s: %d %s", q, r.status, r.body)
		}
	}
	id := e.createLead(map[string]any{"first_name": "M", "last_name": "C", "email": "Match@Example.com", "company": "Acme, Inc."})
	if r := e.do("POST", path("/leads/{id}/qualify", id), e.user, map[string]any{"create_company": true}); r.status != 200 {
		t.Fatalf("qualify: %d %s", r.status, r.body)
	}
	r := e.do("GET", "/leads/match-company?company=ACME%20inc.", e.user, nil)
	if data := r.json(t)["data"].([]any); r.status != 200 || len(data) != 1 || data[0].(map[string]any)["name"] != "Acme, Inc." {
		t.Fatalf("match-company: %d %s", r.status, r.body)
	}
	r = e.do("GET", "/leads/match-contact?email=match@example.COM", e.user, nil)
	if data := r.json(t)["data"].([]any); r.status != 200 || len(data) != 1 {
		t.Fatalf("match-contact: %d %s", r.status, r.body)
	}
	e.contacts.Close()
	wantProblem(t, e.do("GET", "/leads/match-contact?email=a@b.example", e.user, nil), 503, "upstream_unavailable")
}

// TestUpdateDuringQualification puts a PUT without status between the
// qualification's final transaction marking the lead qualified and its
// commit: the PUT must apply its edit to the committed qualified lead, not
// write back the status it could have read before. The final transaction
// (store.FinishQualification) is held before its commit by a lock the
// test keeps on the saga row; the PUT starts only once it waits.
func TestUpdateDuringQualification(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	d := e.store.DB()
	id := e.createLead(map[string]any{"first_name": "Pat", "last_name": "Race", "company": "Acme"})
	if _, err := e.store.BeginQualification(ctx, id, time.Minute); err != nil {
		t.Fatal(err)
	}
	hold, err := d.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(ctx) }()
	if _, err := hold.Exec(ctx, `SELECT 1 FROM qualifications WHERE lead_id = $1 FOR UPDATE`, id); err != nil {
		t.Fatal(err)
	}

	contactID, companyID, dealID := int64(201), int64(202), int64(203)
	finished := make(chan error, 1)
	go func() {
		_, err := e.store.FinishQualification(ctx, id, leads.Saga{Company: leads.Step{ID: &companyID},
			Contact: leads.Step{ID: &contactID}, Deal: leads.Step{ID: &dealID}})
		finished <- err
	}()
	testdb.WaitLockWaiters(t, d, 1) // the lead is marked qualified, not yet committed
	put := make(chan resp, 1)
	go func() {
		put <- e.do("PUT", path("/leads/{id}", id), e.user, `{"first_name":"Patricia","last_name":"Race","notes":"edited"}`)
	}()
	testdb.WaitLockWaiters(t, d, 2) // the PUT waits for the lead
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-finished; err != nil {
		t.Fatalf("finish qualification: %v", err)
	}
	r := <-put
	if r.status != http.StatusOK {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}

	keys := []string{"first_name", "notes", "status", "contact_id", "company_id", "deal_id"}
	want := map[string]any{"first_name": "Patricia", "notes": "edited", "status": "qualified",
		"contact_id": float64(contactID), "company_id": float64(companyID), "deal_id": float64(dealID)}
	for name, got := range map[string]map[string]any{
		"PUT answer": r.json(t)["data"].(map[string]any),
		"GET":        e.do("GET", path("/leads/{id}", id), e.user, nil).json(t)["data"].(map[string]any),
	} {
		if got["qualified_at"] == nil {
			t.Errorf("%s: qualified_at is null", name)
		}
		if diff := cmp.Diff(want, pick(got, keys...)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	// Still qualified, so qualifying it again is refused.
	p := problemJSON(409, "already_qualified", "the lead is already qualified")
	p["contact_id"], p["company_id"], p["deal_id"] = float64(contactID), float64(companyID), float64(dealID)
	wantExactProblem(t, e.do("POST", path("/leads/{id}/qualify", id), e.user, nil), p)
}

// TestUpdateQualifiedLead: PUT is the raw edit (decisions, Leads): without
// status it keeps the lead qualified; with one it sets it, from any
// state; either way the qualification's ids stay.
func TestUpdateQualifiedLead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status string
	}{
		{"without status", map[string]any{"first_name": "Q", "last_name": "L", "phone": "1"}, "qualified"},
		{"with status", map[string]any{"first_name": "Q", "last_name": "L", "status": "contacted"}, "contacted"},
		{"empty status", map[string]any{"first_name": "Q", "last_name": "L", "status": ""}, "new"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := e.createLead(map[string]any{"first_name": "Q", "last_name": "L"})
			q := e.do("POST", path("/leads/{id}/qualify", id), e.user, nil)
			if q.status != http.StatusOK {
				t.Fatalf("qualify: %d %s", q.status, q.body)
			}
			r := e.do("PUT", path("/leads/{id}", id), e.user, tc.body)
			if r.status != http.StatusOK {
				t.Fatalf("PUT: %d %s", r.status, r.body)
			}
			want := map[string]any{"status": tc.status, "contact_id": q.json(t)["contact_id"]}
			if diff := cmp.Diff(want, pick(r.json(t)["data"].(map[string]any), "status", "contact_id")); diff != "" {
				t.Fatalf("lead after PUT (-want +got):\n%s", diff)
			}
		})
	}
}

// TestQualifyStepRefused: a creating call refused with a 4xx clears its
// saved body only when that body was sent for the first time (nothing can
// have been created). A resend after a lost answer, or a 409
// idempotency_key_reused, keeps it: every later attempt resends the same
// body, and a retry that asks for something else is a 409
// qualification_pending naming the earlier parameters, so the deal made
// under the key is never orphaned by a lead marked qualified without it.
func TestQualifyStepRefused(t *testing.T) {
	t.Parallel()
	type attempt struct {
		before func(e *env, id int64)
		body   map[string]any
		want   map[string]any // the problem; nil = 200
	}
	deleteContact := func(e *env, _ int64) {
		var sent map[string]any
		if err := json.Unmarshal([]byte(e.deals.bodies()[0]), &sent); err != nil {
			e.t.Fatal(err)
		}
		e.contacts.DeleteContact(int64(sent["contact_id"].(float64)))
	}
	contactGone := problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"contact_id", "does not exist"})
	keyReused := problemJSON(409, "idempotency_key_reused", "this Idempotency-Key was used with a different request")
	// pending is the 409 for a retry asking for something else than the
	// interrupted qualification: earlier is what it asked.
	pending := func(earlier map[string]any) map[string]any {
		p := problemJSON(409, "qualification_pending", "an interrupted qualification of this lead with other parameters "+
			"has already created records; retry with the same parameters to finish it")
		in := map[string]any{"create_company": false, "create_deal": false, "deal_name": nil, "deal_value": nil,
			"deal_stage_id": nil, "contact_id": nil, "company_id": nil}
		for k, v := range earlier {
			in[k] = v
		}
		p["pending"] = in
		return p
	}
	for _, tc := range []struct {
		name     string
		attempts []attempt
		status   string // the lead's at the end
		deals    int    // deals created
		sameBody bool   // every deal call sent the first one's body
	}{
		{
			name: "resend after a lost answer refused",
			attempts: []attempt{
				{before: func(e *env, _ int64) { e.deals.loseNextAnswer() }, body: map[string]any{"create_deal": true, "deal_name": "Big one"},
					want: problemJSON(504, "upstream_timeout", "deals did not answer in time")},
				{before: deleteContact, body: map[string]any{"create_deal": true, "deal_name": "Big one"}, want: contactGone},
				{body: map[string]any{"create_deal": true, "deal_name": "Other name"}, want: pending(map[string]any{"create_deal": true, "deal_name": "Big one"})},
				{body: map[string]any{}, want: pending(map[string]any{"create_deal": true, "deal_name": "Big one"})},
			},
			status: "new", deals: 1, sameBody: true,
		},
		{
			name: "first send refused as key reused",
			attempts: []attempt{
				{before: func(e *env, id int64) {
					e.deals.fake.Reserve(leads.IdempotencyKey(id, "deal"))
				}, body: map[string]any{"create_deal": true}, want: keyReused},
				{body: map[string]any{"create_deal": true}, want: keyReused},
				{body: map[string]any{"create_deal": true, "deal_name": "Other name"}, want: pending(map[string]any{"create_deal": true})},
				{body: map[string]any{}, want: pending(map[string]any{"create_deal": true})},
			},
			status: "new", deals: 0, sameBody: true,
		},
		{
			name: "first send refused",
			attempts: []attempt{
				{body: map[string]any{"create_deal": true, "deal_stage_id": 99},
					want: problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{"deal_stage_id", "is not an existing stage"})},
				{body: map[string]any{}},
			},
			status: "qualified", deals: 0, sameBody: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			id := e.createLead(map[string]any{"first_name": "Stuck", "last_name": "Saga"})
			for i, a := range tc.attempts {
				if a.before != nil {
					a.before(e, id)
				}
				r := e.do("POST", path("/leads/{id}/qualify", id), e.user, a.body)
				if a.want == nil {
					if r.status != http.StatusOK {
						t.Fatalf("attempt %d: %d %s", i+1, r.status, r.body)
					}
					continue
				}
				wantExactProblem(t, r, a.want)
			}
			lead := e.do("GET", path("/leads/{id}", id), e.user, nil).json(t)["data"].(map[string]any)
			if diff := cmp.Diff(map[string]any{"status": tc.status, "deal_id": nil}, pick(lead, "status", "deal_id")); diff != "" {
				t.Errorf("lead (-want +got):\n%s", diff)
			}
			if n := e.deals.fake.Count(); n != tc.deals {
				t.Errorf("deals created = %d, want %d", n, tc.deals)
			}
			// Compared as JSON: the saga keeps a pending body in jsonb,
			// which does not keep the order of its keys.
			var sent []map[string]any
			for _, b := range e.deals.bodies() {
				var m map[string]any
				if err := json.Unmarshal([]byte(b), &m); err != nil {
					t.Fatal(err)
				}
				sent = append(sent, m)
			}
			if tc.sameBody && len(sent) > 0 {
				want := make([]map[string]any, len(sent))
				for i := range want {
					want[i] = sent[0]
				}
				if diff := cmp.Diff(want, sent); diff != "" {
					t.Errorf("deal bodies sent (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// pick is m restricted to keys (absent keys read as nil).
func pick(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}

// TestQualifyChecksEveryInputFirst: a wrong id or value anywhere in the
// request is a 422 with nothing created in contacts or deals, whatever
// step it belongs to.
func TestQualifyChecksEveryInputFirst(t *testing.T) {
	t.Parallel()
	invalid := func(field, msg string) map[string]any {
		return problemJSON(422, "validation_failed", "one or more fields are invalid", [2]string{field, msg})
	}
	for _, tc := range []struct {
		name string
		body map[string]any
		want map[string]any
	}{
		{"unknown stage", map[string]any{"create_company": true, "create_deal": true, "deal_stage_id": 99},
			invalid("deal_stage_id", "is not an existing stage")},
		{"unknown contact", map[string]any{"create_company": true, "create_deal": true, "contact_id": 9999},
			invalid("contact_id", "is not an existing contact")},
		{"unknown company", map[string]any{"create_deal": true, "company_id": 9999},
			invalid("company_id", "is not an existing company")},
		{"too many decimals", map[string]any{"create_company": true, "create_deal": true, "deal_value": "10.005"},
			invalid("deal_value", "must have at most 2 decimal places")},
		{"too large", map[string]any{"create_company": true, "create_deal": true, "deal_value": "1000000000000000"},
			invalid("deal_value", "must be less than 1000000000000000")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			id := e.createLead(map[string]any{"first_name": "Ann", "last_name": "Lee", "company": "Acme"})
			wantExactProblem(t, e.do("POST", path("/leads/{id}/qualify", id), e.user, tc.body), tc.want)
			contacts, companies := e.contacts.Counts()
			if got := [3]int{contacts, companies, e.deals.fake.Count()}; got != [3]int{} {
				t.Errorf("created (contacts, companies, deals) = %v, want none", got)
			}
		})
	}
}

// TestQualifyRetryMustRepeatItsParameters: after an attempt that created
// the contact and lost deals, a retry asking for another deal is a 409
// naming what the interrupted attempt asked; the same request finishes it.
func TestQualifyRetryMustRepeatItsParameters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createLead(map[string]any{"first_name": "Ann", "last_name": "Lee"})
	first := map[string]any{"create_deal": true, "deal_name": "Alpha", "deal_value": "10.50"}
	e.deals.stop()
	wantProblem(t, e.do("POST", path("/leads/{id}/qualify", id), e.user, first), http.StatusServiceUnavailable, "upstream_unavailable")
	e.deals.restart()
	for _, other := range []map[string]any{
		{"create_deal": true, "deal_name": "Beta", "deal_value": "10.50"},
		{"create_deal": true, "deal_name": "Alpha", "deal_value": "11"},
		{},
	} {
		p := wantProblem(t, e.do("POST", path("/leads/{id}/qualify", id), e.user, other), http.StatusConflict, "qualification_pending")
		want := map[string]any{"create_company": false, "create_deal": true, "deal_name": "Alpha", "deal_value": "10.5",
			"deal_stage_id": nil, "contact_id": nil, "company_id": nil}
		if diff := cmp.Diff(want, p["pending"]); diff != "" {
			t.Errorf("pending (-want +got):\n%s", diff)
		}
	}
	// The same request, an equal amount written otherwise, finishes it.
	r := e.do("POST", path("/leads/{id}/qualify", id), e.user, map[string]any{"create_deal": true, "deal_name": " Alpha ", "deal_value": 10.5})
	if r.status != http.StatusOK {
		t.Fatalf("retry with the same parameters: %d %s", r.status, r.body)
	}
	if c, _ := e.contacts.Counts(); c != 1 || e.deals.fake.Count() != 1 {
		t.Errorf("contacts %d, deals %d; want one each", c, e.deals.fake.Count())
	}
}
