package api_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	if got := e.contacts.contact(int64(contactID))["company_id"]; got != companyID {
		t.Fatalf("contact company_id = %v, want %v", got, companyID)
	}
	deal := e.deals.get(int64(dealID))
	want := map[string]any{"id": int64(dealID), "title": "Acme, Inc. deal", "value": "1500.5", "stage_id": 2.0,
		"company_id": companyID, "contact_id": contactID, "assigned_to": 1.0, "source_lead_id": float64(id)}
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
	// A qualified lead cannot be disqualified.
	wantProblem(t, e.do("PUT", path("/leads/{id}/disqualify", id), e.user, map[string]any{"reason": "x"}), 409, "invalid_transition")
	if c, co := e.contacts.counts(); c != 1 || co != 1 || e.deals.count() != 1 {
		t.Fatalf("created %d contacts, %d companies, %d deals", c, co, e.deals.count())
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
	if title := e.deals.get(int64(m["deal_id"].(float64)))["title"]; title != "Re Use deal" {
		t.Fatalf("deal title = %v", title)
	}
	if c, co := e.contacts.counts(); c != 2 || co != 1 {
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
	if c, co := e.contacts.counts(); c != 1 || co != 1 {
		t.Fatalf("contacts %d companies %d", c, co)
	}
	if e.deals.count() != 1 {
		t.Fatalf("deals = %d", e.deals.count())
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
	if c, co := e.contacts.counts(); c != 1 || co != 1 {
		t.Fatalf("first attempt created %d contacts, %d companies", c, co)
	}

	e.deals.restart()
	r := e.do("POST", path("/leads/{id}/qualify", id), e.user, body)
	if r.status != 200 {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
	if c, co := e.contacts.counts(); c != 1 || co != 1 || e.deals.count() != 1 {
		t.Fatalf("after retry: %d contacts, %d companies, %d deals; want 1 each", c, co, e.deals.count())
	}
	m := r.json(t)
	if m["data"].(map[string]any)["status"] != "qualified" || e.deals.get(int64(m["deal_id"].(float64)))["title"] != "Big one" {
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
