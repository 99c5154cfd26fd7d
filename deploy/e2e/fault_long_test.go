//go:build faults

package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
)

// The tests of this file take minutes (they wait out real timeouts and
// recoveries): `make test-faults` runs them, `make test` does not.

// TestFaultRenderWorkerKilledMidJob kills the render worker (SIGKILL, with
// its Chromium) while it renders a PDF a client is waiting for, and starts
// it again: the download fails at most with retryable answers and then
// succeeds, and every PDF requested meanwhile arrives too.
func TestFaultRenderWorkerKilledMidJob(t *testing.T) {
	s := faultStack(t)
	adm := faultAdmin(t, s)
	deal, _ := contractFixture(t, adm)
	// A long document, so the kill lands while Chromium prints it.
	heavy := "<h1>{{deal.title}} {{contract.number}}</h1>" + strings.Repeat("<h2>Clause</h2><p>"+strings.Repeat("The licensee shall comply. ", 60)+"</p><table><tr><td>a</td><td>b</td></tr></table>", 50)
	tpl := must(t, http.StatusCreated)(adm.Do("POST", "/contract-templates", map[string]any{"name": uniq("Heavy "), "content": heavy})).ID()
	var ids []int64
	for i := range 3 {
		ct := must(t, http.StatusCreated)(adm.Do("POST", "/contracts", map[string]any{"deal_id": deal, "template_id": tpl, "title": fmt.Sprint("Killed ", i)}))
		ids = append(ids, ct.ID())
	}
	first := make(chan *Response, 1)
	var answered time.Time
	go func() {
		r, _ := adm.Do("GET", fmt.Sprintf("/contracts/%d/pdf", ids[0]), nil)
		answered = time.Now()
		first <- r
	}()
	time.Sleep(500 * time.Millisecond)
	killed := time.Now()
	s.Stop("render", true)
	if err := s.StartProcess(t.Context(), "render"); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitReady(t.Context(), "render"); err != nil {
		t.Fatal(err)
	}
	r := <-first
	if answered.Before(killed) {
		t.Fatalf("the PDF was ready before the worker was killed (%s): the kill did not land mid-job", killed.Sub(answered))
	}
	if r != nil && r.Status != http.StatusOK {
		wantUnavailable(t, "pdf while the worker died", r, nil)
		t.Logf("the request waiting when the worker died: %d %s", r.Status, r.Header.Get("Retry-After"))
	} else if r != nil {
		t.Logf("the request waiting when the worker died: 200, %s after the kill", answered.Sub(killed).Round(time.Millisecond))
	}
	for _, id := range ids {
		tries := downloadEventually(t, adm, id, 3*time.Minute)
		t.Logf("contract %d: PDF after %d tries", id, tries)
	}
}

// TestFaultGatewayTimeout holds contacts' answers longer than the gateway's
// upstream timeout (15 s in the fault stack): the client gets a 504
// problem, and the service is used normally once the latency is gone.
func TestFaultGatewayTimeout(t *testing.T) {
	s := faultStack(t)
	adm := faultAdmin(t, s)
	toxic(t, s.Faults.HTTP["contacts"], "slow", "latency", "downstream", toxiclient.Attributes{"latency": 16000})
	r, err := adm.Do("GET", "/contacts", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != http.StatusGatewayTimeout {
		t.Fatalf("status %d, want 504: %s", r.Status, r.Body)
	}
	if err := s.Faults.Heal(); err != nil {
		t.Fatal(err)
	}
	must(t, http.StatusOK)(adm.Do("GET", "/contacts", nil))
}

// TestFaultQualificationLeadsKilled kills leads (SIGKILL) while its
// qualification saga waits on deals (held back 3 s), after contacts wrote
// the contact and company, and restarts it: the retried qualification
// finishes with exactly one contact, company and deal once the killed
// attempt's lease has expired.
func TestFaultQualificationLeadsKilled(t *testing.T) {
	s := faultStack(t)
	adm := faultAdmin(t, s)
	company := uniq("Killco ")
	email := uniq("k") + "@qualify.test"
	lead := must(t, http.StatusCreated)(adm.Do("POST", "/leads", map[string]any{
		"first_name": "Kai", "last_name": "Killed", "email": email, "company": company,
	}))
	path := fmt.Sprintf("/leads/%d/qualify", lead.ID())
	body := map[string]any{"create_company": true, "create_deal": true, "deal_value": "700.00"}
	toxic(t, s.Faults.HTTP["deals"], "slow", "latency", "upstream", toxiclient.Attributes{"latency": 3000})
	answer := make(chan *Response, 1)
	go func() {
		r, _ := adm.Do("POST", path, body)
		answer <- r
	}()
	eventually(t, "the contact step is done", func() error {
		if n := count(t, s, "SELECT count(*) FROM contacts.contacts WHERE email = $1", email); n != 1 {
			return fmt.Errorf("%d contacts", n)
		}
		return nil
	})
	s.Stop("leads", true)
	if r := <-answer; r != nil {
		wantUnavailable(t, "qualify when leads died", r, nil)
	}
	if err := s.Faults.Heal(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(t.Context(), "leads"); err != nil {
		t.Fatal(err)
	}
	// The killed attempt holds the lead's saga lease (60 s): until it
	// expires a retry is 409 qualification_in_progress, then it resumes.
	var ok *Response
	deadline := time.Now().Add(90 * time.Second)
	for ok == nil {
		r, err := adm.Do("POST", path, body)
		switch {
		case err != nil:
			t.Fatal(err)
		case r.Status == http.StatusOK:
			ok = r
		case r.Status == http.StatusConflict && r.JSON["code"] == "qualification_in_progress" && time.Now().Before(deadline):
			time.Sleep(2 * time.Second)
		default:
			t.Fatalf("retry: %s", r)
		}
	}
	companyID := int64(ok.JSON["company_id"].(float64))
	for what, n := range map[string]int{
		"contacts":  count(t, s, "SELECT count(*) FROM contacts.contacts WHERE email = $1", email),
		"companies": count(t, s, "SELECT count(*) FROM contacts.companies WHERE name = $1", company),
		"deals":     count(t, s, "SELECT count(*) FROM deals.deals WHERE company_id = $1", companyID),
	} {
		if n != 1 {
			t.Errorf("%s: %d rows, want exactly 1", what, n)
		}
	}
}
