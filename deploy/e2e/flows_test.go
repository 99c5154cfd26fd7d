package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// uniq makes e-mail addresses and names unique per test run.
func uniq(prefix string) string {
	return fmt.Sprintf("%s%d", prefix, time.Now().UnixNano())
}

func TestContactsThroughGateway(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	co := must(t, http.StatusCreated)(adm.Do("POST", "/companies", map[string]any{"name": "Initech " + uniq("")}))
	email := uniq("peter") + "@initech.test"
	c := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{
		"first_name": "Peter", "last_name": "Gibbons", "email": email, "company_id": co.ID(), "tags": "vip, vip ,tps",
	}))
	if c.JSON["success"] != true || c.Data()["company_name"] != co.Data()["name"] || c.Data()["tags"] != "vip,tps" {
		t.Fatalf("create: %s", c)
	}
	list := must(t, http.StatusOK)(adm.Do("GET", "/contacts?search="+url.QueryEscape(strings.ToUpper(email[:10]))+"&sort_by=created_at&sort_dir=desc", nil))
	if list.JSON["total"] != float64(1) || list.JSON["per_page"] != float64(25) {
		t.Fatalf("search: %s", list)
	}
	bad := must(t, http.StatusUnprocessableEntity)(adm.Do("POST", "/contacts", map[string]any{"first_name": "", "email": "nope"}))
	if bad.JSON["code"] != "validation_failed" || len(bad.JSON["errors"].([]any)) < 2 {
		t.Errorf("validation: %s", bad)
	}
	must(t, http.StatusCreated)(adm.Do("POST", fmt.Sprintf("/contacts/%d/notes", c.ID()), map[string]any{"content": "met at the conference"}))
	must(t, http.StatusOK)(adm.Do("DELETE", fmt.Sprintf("/contacts/%d", c.ID()), nil))
	must(t, http.StatusNotFound)(adm.Do("GET", fmt.Sprintf("/contacts/%d", c.ID()), nil))
}

func TestContactCSVRoundTrip(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	tag := uniq("csv")
	csv := "First Name;Last Name;E-mail;company_name;tags\n" +
		"Ann;Archer;" + tag + "a@x.test;" + tag + " Corp;imported\n" +
		"Bob;;" + tag + "b@x.test;;\n" +
		"Cid;Cole;" + tag + "a@x.test;;\n"
	r := must(t, http.StatusOK)(adm.Upload("/contacts/import", "file", "contacts.csv", []byte(csv)))
	if r.JSON["imported"] != float64(1) || r.JSON["skipped"] != float64(2) {
		t.Fatalf("import: %s", r)
	}
	req, _ := http.NewRequest("GET", stack.Gateway+"/contacts/export?search="+tag, nil)
	req.Header.Set("Authorization", "Bearer "+adm.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(buf.String(), tag+"a@x.test") || !strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("export: %d %s %q", resp.StatusCode, resp.Header, buf.String())
	}
}

// TestQualificationSurvivesDealsOutage stops the deals service in the
// middle of a qualification: the contact and company steps succeed, the
// deal step fails, the lead stays unqualified; after deals returns a retry
// finishes with exactly one contact, company and deal.
func TestQualificationSurvivesDealsOutage(t *testing.T) {
	adm := admin(t)
	company := uniq("Umbrella ")
	email := uniq("alice") + "@umbrella.test"
	lead := must(t, http.StatusCreated)(adm.Do("POST", "/leads", map[string]any{
		"first_name": "Alice", "last_name": "Abernathy", "email": email, "company": company,
	}))
	path := fmt.Sprintf("/leads/%d/qualify", lead.ID())
	body := map[string]any{"create_company": true, "create_deal": true, "deal_value": 1500.5}

	stack.Stop("deals", false)
	r, err := adm.Do("POST", path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != http.StatusServiceUnavailable && r.Status != http.StatusBadGateway && r.Status != http.StatusGatewayTimeout {
		t.Fatalf("qualify with deals down: %s", r)
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
		t.Errorf("not a problem: %s", r)
	}
	got := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/leads/%d", lead.ID()), nil))
	if got.Data()["status"] == "qualified" {
		t.Fatalf("lead qualified although the deal step failed: %s", got)
	}
	if err := stack.Restart(t.Context(), "deals"); err != nil {
		t.Fatal(err)
	}
	ok := must(t, http.StatusOK)(adm.Do("POST", path, body))
	if ok.JSON["success"] != true || ok.JSON["contact_id"] == nil || ok.JSON["company_id"] == nil || ok.JSON["deal_id"] == nil {
		t.Fatalf("retry: %s", ok)
	}
	again := must(t, http.StatusConflict)(adm.Do("POST", path, body))
	if again.JSON["code"] != "already_qualified" {
		t.Errorf("second qualify: %s", again)
	}
	contacts := must(t, http.StatusOK)(adm.Do("GET", "/contacts?search="+url.QueryEscape(email), nil))
	companies := must(t, http.StatusOK)(adm.Do("GET", "/companies?search="+url.QueryEscape(company), nil))
	deals := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/deals?company_id=%d", int64(ok.JSON["company_id"].(float64))), nil))
	for name, l := range map[string]*Response{"contacts": contacts, "companies": companies, "deals": deals} {
		if l.JSON["total"] != float64(1) {
			t.Errorf("%s: want exactly one, got %s", name, l)
		}
	}
	deal := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/deals/%d", int64(ok.JSON["deal_id"].(float64))), nil))
	if v := fmt.Sprint(deal.Data()["value"]); v != "1500.50" {
		t.Errorf("deal value = %s", v)
	}
}

// TestIntakeNeverLosesASubmission stops leads, posts a public lead (202),
// restarts leads and sees exactly one lead delivered by the retry job.
func TestIntakeNeverLosesASubmission(t *testing.T) {
	adm := admin(t)
	key := must(t, http.StatusCreated)(adm.Do("POST", "/api-keys", map[string]any{"name": uniq("form")}))
	secret, _ := key.Data()["key"].(string)
	if secret == "" {
		secret, _ = key.Data()["secret"].(string)
	}
	pub := stack.Client()
	pub.Header.Set("X-API-Key", secret)

	email := uniq("web") + "@lead.test"
	r := must(t, http.StatusCreated)(pub.Do("POST", "/public/leads", map[string]any{"first_name": "Wendy", "last_name": "Web", "email": email}))
	id := r.ID()
	lead := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/leads/%d", id), nil))
	if lead.Data()["source"] != "public-api" {
		t.Errorf("source = %v", lead.Data()["source"])
	}
	must(t, http.StatusUnauthorized)(stack.Client().Do("POST", "/public/leads", map[string]any{"first_name": "x"}))

	stack.Stop("leads", false)
	late := uniq("late") + "@lead.test"
	r = must(t, http.StatusAccepted)(pub.Do("POST", "/public/leads", map[string]any{"first_name": "Lou", "last_name": "Late", "email": late}))
	if r.Data()["id"] != nil || r.Data()["submission_id"] == nil {
		t.Fatalf("202 body: %s", r)
	}
	if err := stack.Restart(t.Context(), "leads"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the queued submission becomes exactly one lead", func() error {
		l, err := adm.Do("GET", "/leads?search="+url.QueryEscape(late), nil)
		if err != nil {
			return err
		}
		if l.JSON["total"] != float64(1) {
			return fmt.Errorf("leads: %s", l)
		}
		return nil
	})
}

func TestContractPDFAndDOCX(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	co := must(t, http.StatusCreated)(adm.Do("POST", "/companies", map[string]any{"name": "Wayne Enterprises"}))
	deal := must(t, http.StatusCreated)(adm.Do("POST", "/deals", map[string]any{"title": "Batcave retrofit", "value": "250000.00", "company_id": co.ID()}))
	tpl := must(t, http.StatusCreated)(adm.Do("POST", "/contract-templates", map[string]any{
		"name":        uniq("MSA "),
		"content":     "<h1>Master Services Agreement</h1><p>Between us and {{licensee.company_name}} for {{ deal.title }}.</p><p>No. {{contract.number}}</p>",
		"header_left": "Confidential", "footer_right": "Page {{page}} of {{pages}}",
	}))
	c := must(t, http.StatusCreated)(adm.Do("POST", "/contracts", map[string]any{"deal_id": deal.ID(), "template_id": tpl.ID(), "title": "Batcave MSA"}))
	number, _ := c.Data()["contract_number"].(string)
	if !strings.HasPrefix(number, "CTR-") || !strings.Contains(fmt.Sprint(c.Data()["content"]), "Wayne Enterprises") {
		t.Fatalf("contract: %s", c)
	}
	pdf := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/contracts/%d/pdf", c.ID()), nil))
	if !bytes.HasPrefix(pdf.Body, []byte("%PDF-")) || !strings.Contains(pdf.Header.Get("Content-Disposition"), number+".pdf") {
		t.Fatalf("pdf: %d %v", pdf.Status, pdf.Header)
	}
	cmd := exec.Command("pdftotext", "-", "-")
	cmd.Stdin = bytes.NewReader(pdf.Body)
	text, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{number, "Wayne Enterprises", "Confidential", "Page 1 of 1"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("pdf text lacks %q:\n%s", want, text)
		}
	}
	// Accessible by default: tagged, titled with the contract's number and title.
	info := exec.Command("pdfinfo", "-")
	info.Stdin = bytes.NewReader(pdf.Body)
	meta, err := info.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^Tagged:\s+yes$`),
		regexp.MustCompile(`(?m)^Title:\s+` + regexp.QuoteMeta(number+" Batcave MSA") + `$`),
	} {
		if !want.Match(meta) {
			t.Errorf("pdfinfo lacks %s:\n%s", want, meta)
		}
	}
	docx := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/contracts/%d/docx", c.ID()), nil))
	if !bytes.HasPrefix(docx.Body, []byte("PK")) || !strings.Contains(docx.Header.Get("Content-Disposition"), number+".docx") {
		t.Fatalf("docx: %d %v", docx.Status, docx.Header)
	}
}

func TestLinkedEmails(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	email := uniq("mail") + "@linked.test"
	must(t, http.StatusCreated)(adm.Do("POST", "/emails", map[string]any{
		"message_id": "<" + uniq("m") + "@linked.test>", "from": "sales@us.test", "to": []string{strings.ToUpper(email)},
		"subject": "Proposal", "body_text": "Hello, here is the proposal.", "sent_at": time.Now().UTC().Format(time.RFC3339), "direction": "outbound",
	}))
	// The contact is created after the message and still sees it.
	c := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{"first_name": "Lin", "last_name": "Ked", "email": email}))
	l := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/contacts/%d/linked-emails", c.ID()), nil))
	data, _ := l.JSON["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["subject"] != "Proposal" {
		t.Fatalf("linked emails: %s", l)
	}
	must(t, http.StatusNotFound)(adm.Do("GET", "/contacts/999999999/linked-emails", nil))
}

// TestTaskReferencesMustExist: the contact, company and deal a task names
// live in other contexts; each service that keeps tasks checks them with
// their owner (docs/api.md: referenced ids must exist → 422).
func TestTaskReferencesMustExist(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	co := must(t, http.StatusCreated)(adm.Do("POST", "/companies", map[string]any{"name": uniq("Stark ")}))
	ct := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{"first_name": "Pepper", "last_name": "Potts"}))
	deal := must(t, http.StatusCreated)(adm.Do("POST", "/deals", map[string]any{"title": "Arc reactor", "value": "1000.00", "company_id": co.ID()}))
	lead := must(t, http.StatusCreated)(adm.Do("POST", "/leads", map[string]any{"first_name": "Happy", "last_name": "Hogan", "email": uniq("happy") + "@stark.test"}))
	tpl := must(t, http.StatusCreated)(adm.Do("POST", "/contract-templates", map[string]any{"name": uniq("NDA "), "content": "<p>{{deal.title}}</p>"}))
	contract := must(t, http.StatusCreated)(adm.Do("POST", "/contracts", map[string]any{"deal_id": deal.ID(), "template_id": tpl.ID(), "title": "NDA"}))

	const missing = 999_999_999
	for _, parent := range []string{
		fmt.Sprintf("/contacts/%d", ct.ID()), fmt.Sprintf("/leads/%d", lead.ID()), fmt.Sprintf("/contracts/%d", contract.ID()),
	} {
		for field, id := range map[string]int64{"deal_id": missing, "company_id": missing} {
			r := must(t, http.StatusUnprocessableEntity)(adm.Do("POST", parent+"/tasks", map[string]any{"title": "Follow up", field: id}))
			want := []any{map[string]any{"field": field, "message": "does not exist"}}
			if r.JSON["code"] != "validation_failed" || fmt.Sprint(r.JSON["errors"]) != fmt.Sprint(want) {
				t.Errorf("%s task with unknown %s: %s", parent, field, r)
			}
		}
		must(t, http.StatusCreated)(adm.Do("POST", parent+"/tasks", map[string]any{"title": "Follow up", "deal_id": deal.ID(), "company_id": co.ID()}))
	}
	r := must(t, http.StatusUnprocessableEntity)(adm.Do("POST", fmt.Sprintf("/leads/%d/tasks", lead.ID()), map[string]any{"title": "x", "contact_id": missing}))
	if fmt.Sprint(r.JSON["errors"]) != fmt.Sprint([]any{map[string]any{"field": "contact_id", "message": "does not exist"}}) {
		t.Errorf("lead task with unknown contact: %s", r)
	}
}
