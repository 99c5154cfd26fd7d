package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestContractTour calls the documented operations a client uses most,
// one after another, so that the OpenAPI contract check (see Contract)
// compares their real requests and answers with the document: every
// record, envelope and request body of the public API passes through it.
func TestContractTour(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	ok := func(want int, method, path string, body any) *Response {
		t.Helper()
		r, err := adm.Do(method, path, body)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != want {
			t.Errorf("%s %s = %d, want %d: %s", method, path, r.Status, want, r.Body)
		}
		return r
	}
	id := func(r *Response) string { return fmt.Sprint(r.ID()) }
	short := func(prefix string) string { return fmt.Sprintf("%s%d", prefix, time.Now().UnixNano()%1_000_000_000) }

	// Identity.
	session := must(t, http.StatusOK)(stack.Client().Do("POST", "/auth/login", map[string]any{"email": AdminEmail, "password": AdminPassword}))
	refresh, _ := session.Data()["refresh_token"].(string)
	pair := must(t, http.StatusOK)(stack.Client().Do("POST", "/auth/refresh", map[string]any{"refresh_token": refresh}))
	next, _ := pair.Data()["refresh_token"].(string)
	must(t, http.StatusOK)(stack.Client().Do("POST", "/auth/logout", map[string]any{"refresh_token": next}))
	must(t, http.StatusOK)(stack.Client().Do("GET", "/auth/jwks", nil))
	me := ok(200, "GET", "/auth/me", nil)
	team := ok(201, "POST", "/teams", map[string]any{"name": uniq("Tour team ")})
	ok(200, "GET", "/teams", nil)
	ok(200, "PUT", "/teams/"+id(team), map[string]any{"name": uniq("Tour team renamed ")})
	user := ok(201, "POST", "/users", map[string]any{"name": "Tour User", "email": uniq("tour") + "@example.test",
		"password": "correct horse battery", "role": "user", "team_id": team.ID()})
	ok(200, "GET", "/users", nil)
	ok(200, "GET", "/users/"+id(user), nil)
	ok(200, "PUT", "/users/"+id(user), map[string]any{"name": "Tour User", "email": user.Data()["email"], "team_id": nil})
	ok(200, "GET", "/teams/"+id(team), nil)
	ok(200, "DELETE", "/teams/"+id(team), nil)
	key := ok(201, "POST", "/api-keys", map[string]any{"name": uniq("tour"), "rate_limit_per_minute": 600,
		"allowed_origins": []string{"https://www.example.com"}})
	ok(200, "GET", "/api-keys", nil)

	// Contacts and companies.
	co := ok(201, "POST", "/companies", map[string]any{"name": uniq("Tour Co "), "domain": "tour.example", "industry": nil})
	ok(200, "GET", "/companies?sort_by=created_at&sort_dir=DESC&per_page=5", nil)
	ok(200, "GET", "/companies/"+id(co), nil)
	ok(200, "PUT", "/companies/"+id(co), map[string]any{"name": uniq("Tour Co "), "website": "https://tour.example"})
	email := uniq("tour") + "@contact.test"
	ct := ok(201, "POST", "/contacts", map[string]any{"first_name": "Tina", "last_name": "Tour", "email": email,
		"company_id": co.ID(), "assigned_to": me.ID(), "status": "active", "source": "tour"})
	ok(200, "GET", "/contacts", nil)
	ok(200, "GET", "/contacts?status=active&scope=company&sort_by=company_name&page=1&per_page=10&date_from=2020-01-01&company_id="+id(co), nil)
	ok(200, "GET", "/contacts/"+id(ct), nil)
	ok(200, "PUT", "/contacts/"+id(ct), map[string]any{"first_name": "Tina", "last_name": "Tour", "phone": "+1 555 0100", "notes": nil})
	cp := "/contacts/" + id(ct)
	note := ok(201, "POST", cp+"/notes", map[string]any{"content": "tour note"})
	ok(200, "GET", cp+"/notes", nil)
	ok(200, "DELETE", cp+"/notes/"+id(note), nil)
	task := ok(201, "POST", cp+"/tasks", map[string]any{"title": "Call back", "due_date": "2030-01-02", "priority": "high", "company_id": co.ID()})
	ok(200, "GET", cp+"/tasks", nil)
	ok(200, "GET", cp+"/tasks/"+id(task), nil)
	ok(200, "PUT", cp+"/tasks/"+id(task), map[string]any{"title": "Call back", "status": "completed"})
	ok(200, "DELETE", cp+"/tasks/"+id(task), nil)
	ok(200, "GET", cp+"/linked-emails", nil)
	ok(200, "GET", "/contacts/export?search="+email, nil)
	ok(200, "GET", "/contacts/template", nil)

	// Leads.
	lead := ok(201, "POST", "/leads", map[string]any{"first_name": "Larry", "last_name": "Lead", "email": uniq("larry") + "@lead.test",
		"company": "Lead Co", "source": "tour", "tags": "a,b"})
	lp := "/leads/" + id(lead)
	ok(200, "GET", "/leads?status=new&sort_by=created_at&scope=me", nil)
	ok(200, "GET", lp, nil)
	ok(200, "PUT", lp, map[string]any{"first_name": "Larry", "last_name": "Lead", "status": "contacted", "assigned_to": me.ID()})
	ok(201, "POST", lp+"/notes", map[string]any{"content": "lead note"})
	ok(200, "GET", lp+"/notes", nil)
	ok(201, "POST", lp+"/tasks", map[string]any{"title": "Qualify"})
	ok(200, "GET", lp+"/tasks", nil)
	ok(200, "GET", lp+"/linked-emails", nil)
	ok(200, "GET", "/leads/match-company?company=Tour", nil)
	ok(200, "GET", "/leads/match-contact?email="+email, nil)
	ok(200, "GET", "/leads/export", nil)
	ok(200, "GET", "/leads/template", nil)
	ok(200, "PUT", lp+"/disqualify", map[string]any{"reason": "no budget"})
	r, err := adm.Upload("/leads/import", "file", "leads.csv", []byte("first_name,last_name,email\nIan,Import,"+uniq("ian")+"@lead.test\n"))
	if err != nil || r.Status != 200 {
		t.Errorf("lead import: %v %v", err, r)
	}

	// Deals, stages, quotes.
	stage := ok(201, "POST", "/deal-stages", map[string]any{"name": short("Stage "), "outcome": "open"})
	ok(200, "GET", "/deal-stages", nil)
	ok(200, "GET", "/deal-stages/"+id(stage), nil)
	ok(200, "PUT", "/deal-stages/"+id(stage), map[string]any{"name": short("Stage ")})
	deal := ok(201, "POST", "/deals", map[string]any{"title": "Tour deal", "value": 1234.5, "currency": "EUR",
		"company_id": co.ID(), "contact_id": ct.ID(), "expected_close_date": "2030-06-30", "stage_id": stage.ID()})
	dp := "/deals/" + id(deal)
	ok(200, "GET", "/deals?status=open&company_id="+id(co), nil)
	ok(200, "GET", dp, nil)
	ok(200, "PUT", dp, map[string]any{"title": "Tour deal", "value": "2000.00"})
	quote := ok(201, "POST", dp+"/quotes", map[string]any{"valid_until": "2030-01-31", "tax_rate": "20",
		"line_items": []map[string]any{{"description": "Day", "quantity": 2, "unit_price": "500.00"}}})
	ok(200, "GET", dp+"/quotes", nil)
	ok(200, "GET", "/quotes/"+id(quote), nil)
	ok(200, "PUT", "/quotes/"+id(quote), map[string]any{"status": "sent"})
	ok(200, "DELETE", "/quotes/"+id(quote), nil)

	// Contracts and templates.
	tpl := ok(201, "POST", "/contract-templates", map[string]any{"name": short("Tpl "), "content": "<p>{{deal.title}}</p>",
		"number_prefix": "TOUR", "default_term_months": 12, "footer_center": "Page {{page}} of {{pages}}"})
	ok(200, "GET", "/contract-templates", nil)
	ok(200, "GET", "/contract-templates/"+id(tpl), nil)
	ok(200, "PUT", "/contract-templates/"+id(tpl), map[string]any{"name": short("Tpl "), "content": "<p>{{deal.title}}!</p>"})
	ok(200, "GET", "/contract-templates/tags", nil)
	contract := ok(201, "POST", "/contracts", map[string]any{"deal_id": deal.ID(), "template_id": tpl.ID(), "title": "Tour MSA",
		"start_date": "2030-01-01", "auto_renew": true})
	kp := "/contracts/" + id(contract)
	ok(200, "GET", "/contracts?status=draft,active&sort_by=created_at&deal_id="+id(deal), nil)
	ok(200, "GET", kp, nil)
	ok(200, "PUT", kp, map[string]any{"deal_id": deal.ID(), "template_id": tpl.ID(), "title": "Tour MSA v2", "partner_ref": "PO-1"})
	ok(200, "PUT", kp+"/regenerate", nil)
	ok(201, "POST", kp+"/notes", map[string]any{"content": "contract note"})
	ok(200, "GET", kp+"/notes", nil)
	ok(201, "POST", kp+"/tasks", map[string]any{"title": "Get it signed"})
	ok(200, "GET", kp+"/tasks", nil)

	// Public intake and its submissions.
	pub := stack.Client()
	pub.Header.Set("X-API-Key", fmt.Sprint(key.Data()["key"]))
	pub.Header.Set("Idempotency-Key", uniq("tour-"))
	pl, err := pub.Do("POST", "/public/leads", map[string]any{"first_name": "Pat", "last_name": "Public", "email": uniq("pat") + "@pub.test", "source": "form"})
	if err != nil || pl.Status != 201 {
		t.Errorf("public lead: %v %v", err, pl)
	}
	subs := ok(200, "GET", "/intake/submissions?per_page=1", nil)
	if data, _ := subs.JSON["data"].([]any); len(data) > 0 {
		ok(200, "GET", fmt.Sprintf("/intake/submissions/%v", data[0].(map[string]any)["id"]), nil)
	}

	// Mail.
	mid := uniq("tour") + "@mail.test"
	msg := ok(201, "POST", "/emails", map[string]any{"message_id": "<" + mid + ">", "from": "tina@example.test",
		"to": []string{email}, "subject": "Tour", "body_text": "hello", "sent_at": "2030-01-01T10:00:00Z", "direction": "inbound"})
	// The same id without brackets is the same message, answered (200) in
	// its stored <left@right> form.
	again := ok(200, "POST", "/emails", map[string]any{"message_id": mid, "from": "tina@example.test"})
	if got := again.Data()["message_id"]; got != "<"+mid+">" || id(again) != id(msg) {
		t.Errorf("repeated message id: %v", again)
	}
	ok(200, "GET", "/emails/"+id(msg), nil)
	ok(200, "GET", "/mailboxes", nil)

	// Clean up what other tests might list.
	ok(200, "DELETE", "/api-keys/"+id(key), nil)
	ok(200, "DELETE", kp, nil)
	ok(200, "DELETE", dp, nil)
	ok(200, "DELETE", "/deal-stages/"+id(stage), nil)
	ok(200, "DELETE", "/contract-templates/"+id(tpl), nil)
	ok(200, "DELETE", lp, nil)
	ok(200, "DELETE", cp, nil)
	ok(200, "DELETE", "/companies/"+id(co), nil)
	ok(200, "DELETE", "/users/"+id(user), nil)
}
