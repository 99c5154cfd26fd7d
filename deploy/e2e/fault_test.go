package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/jackc/pgx/v5"
)

// Fault tests run against a second stack of their own (faultStack), whose
// service-to-service URLs and PostgreSQL connections pass through
// toxiproxy and whose Redis is private, so the failures they inject never
// reach the shared stack of the other tests. They are not parallel: each
// heals every fault before it returns. What they prove is listed in
// docs/reliability.md.

var (
	builtBin  string
	faultOnce sync.Once
	faultS    *Stack
	faultErr  error
)

// faultEnv shortens the timeouts so that "latency beyond each timeout"
// costs seconds, and makes intake's retry job quick.
var faultEnv = map[string]string{
	"CRM_UPSTREAM_TIMEOUT": "15s", "CRM_DRAIN_TIMEOUT": "15s",
	"INTAKE_FORWARD_TIMEOUT": "2s", "INTAKE_RETRY_LEASE": "5s",
	"INTAKE_RETRY_INTERVAL": "200ms", "INTAKE_RETRY_BASE": "200ms", "INTAKE_RETRY_MAX": "1s",
	"CRM_RATE_LIMIT_USER_PER_MINUTE": "100000", "CRM_RATE_LIMIT_IP_PER_MINUTE": "100000",
}

// faultStack starts the fault stack once per test binary.
func faultStack(t *testing.T) *Stack {
	t.Helper()
	faultOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		env := maps.Clone(faultEnv)
		maps.Copy(env, webhookEnv)
		faultS, faultErr = Start(ctx, builtBin, Options{Render: true, Faults: true, Env: env})
	})
	if faultErr != nil {
		t.Fatal(faultErr)
	}
	t.Cleanup(func() {
		if err := faultS.Faults.Heal(); err != nil {
			t.Errorf("heal: %v", err)
		}
	})
	return faultS
}

func closeFaultStack() {
	if faultS != nil {
		faultS.Close()
	}
}

// faultAdmin logs in as the admin of s.
func faultAdmin(t *testing.T, s *Stack) *Client {
	t.Helper()
	c := s.Client()
	var tok string
	eventually(t, "admin login", func() error {
		var err error
		tok, err = c.Login(AdminEmail, AdminPassword)
		return err
	})
	return c.With(tok)
}

// count runs a COUNT(*) query on the stack's database as the superuser,
// directly (not through the fault proxies).
func count(t *testing.T, s *Stack, sql string, args ...any) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// toxic adds a toxic to p and fails the test if toxiproxy refuses it.
func toxic(t *testing.T, p *toxiclient.Proxy, name, kind, stream string, attrs toxiclient.Attributes) {
	t.Helper()
	if _, err := p.AddToxic(name, kind, stream, 1, attrs); err != nil {
		t.Fatalf("toxic %s on %s: %v", name, p.Name, err)
	}
}

// wantUnavailable checks an answer is a 502, 503 or 504 problem: what a
// client may retry.
func wantUnavailable(t *testing.T, what string, r *Response, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if r.Status != http.StatusBadGateway && r.Status != http.StatusServiceUnavailable && r.Status != http.StatusGatewayTimeout {
		t.Fatalf("%s: status %d, want 502/503/504: %s", what, r.Status, r.Body)
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("%s: %d is not problem+json: %s", what, r.Status, r.Body)
	}
}

// TestFaultQualificationExactlyOnce cuts the qualification saga at each of
// its remote steps: the contacts or deals answer is lost after the record
// was written (connection reset on the way back), or comes later than the
// caller's 10 s timeout. The qualification fails with a retryable problem
// and leaves the lead unqualified; the retry finishes with exactly one
// contact, company and deal.
func TestFaultQualificationExactlyOnce(t *testing.T) {
	s := faultStack(t)
	adm := faultAdmin(t, s)
	cases := []struct {
		name, service, kind string
		attrs               toxiclient.Attributes
	}{
		{"contacts answer reset", "contacts", "reset_peer", toxiclient.Attributes{"timeout": 0}},
		{"deals answer reset", "deals", "reset_peer", toxiclient.Attributes{"timeout": 0}},
		{"deals slower than the timeout", "deals", "latency", toxiclient.Attributes{"latency": 11000}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			company := uniq("Qualco ")
			email := uniq("q") + "@qualify.test"
			lead := must(t, http.StatusCreated)(adm.Do("POST", "/leads", map[string]any{
				"first_name": "Quinn", "last_name": "Qualified", "email": email, "company": company,
			}))
			path := fmt.Sprintf("/leads/%d/qualify", lead.ID())
			body := map[string]any{"create_company": true, "create_deal": true, "deal_value": "2500.00"}

			toxic(t, s.Faults.HTTP[tc.service], "cut", tc.kind, "downstream", tc.attrs)
			r, err := adm.Do("POST", path, body)
			wantUnavailable(t, "qualify under the fault", r, err)
			if err := s.Faults.Heal(); err != nil {
				t.Fatal(err)
			}
			got := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/leads/%d", lead.ID()), nil))
			if got.Data()["status"] == "qualified" {
				t.Fatalf("lead qualified although a step failed: %s", got)
			}
			var ok *Response
			eventually(t, "the retried qualification succeeds", func() error {
				r, err := adm.Do("POST", path, body)
				if err != nil {
					return err
				}
				if r.Status != http.StatusOK {
					return fmt.Errorf("retry: %s", r)
				}
				ok = r
				return nil
			})
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
		})
	}
}

// TestFaultIntakeNeverLosesAcceptedSubmissions posts public leads from
// four clients while leads is killed (SIGKILL) and restarted, and while
// leads' answers to intake are reset after the lead was written: every
// submission answered 201 or 202 becomes exactly one lead.
func TestFaultIntakeNeverLosesAcceptedSubmissions(t *testing.T) {
	s := faultStack(t)
	adm := faultAdmin(t, s)
	key := must(t, http.StatusCreated)(adm.Do("POST", "/api-keys", map[string]any{"name": uniq("fault-form")}))
	secret, _ := key.Data()["key"].(string)
	pub := s.Client()
	pub.Header.Set("X-API-Key", secret)
	domain := uniq("intake") + ".test"

	const clients, each = 4, 12
	var mu sync.Mutex
	accepted, refused := 0, map[int]int{}
	var sent sync.WaitGroup
	step := make(chan int, clients*each)
	post := func(c, i int) {
		r, err := pub.Do("POST", "/public/leads", map[string]any{
			"first_name": "Ina", "last_name": fmt.Sprintf("Take %d-%d", c, i), "email": fmt.Sprintf("c%d-%d@%s", c, i, domain),
		})
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			refused[-1]++
		case r.Status == http.StatusCreated || r.Status == http.StatusAccepted:
			accepted++
		default:
			refused[r.Status]++
		}
	}
	for c := range clients {
		sent.Add(1)
		go func() {
			defer sent.Done()
			for i := range each {
				post(c, i)
				step <- 1
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	done := 0
	wait := func(n int) {
		for ; done < n; done++ {
			<-step
		}
	}
	wait(8)
	s.Stop("leads", true)
	wait(16)
	if err := s.Restart(t.Context(), "leads"); err != nil {
		t.Fatal(err)
	}
	toxic(t, s.Faults.HTTP["leads"], "lost-answers", "reset_peer", "downstream", toxiclient.Attributes{"timeout": 0})
	wait(32)
	if err := s.Faults.Heal(); err != nil {
		t.Fatal(err)
	}
	sent.Wait()
	if accepted == 0 {
		t.Fatalf("no submission accepted (refused: %v)", refused)
	}
	eventually(t, "every accepted submission is exactly one lead", func() error {
		if n := count(t, s, "SELECT count(*) FROM leads.leads WHERE email LIKE $1", "%@"+domain); n != accepted {
			return fmt.Errorf("%d leads for %d accepted submissions (refused: %v)", n, accepted, refused)
		}
		return nil
	})
	// Still exactly one once the retry job has had time to run again.
	time.Sleep(2 * time.Second)
	if n := count(t, s, "SELECT count(*) FROM leads.leads WHERE email LIKE $1", "%@"+domain); n != accepted {
		t.Fatalf("%d leads for %d accepted submissions", n, accepted)
	}
	t.Logf("intake under faults: %d accepted, refused %v, leads %d", accepted, refused, accepted)
}

// TestFaultContactCreateServiceKilled kills contacts (SIGKILL) while three
// clients create contacts and restarts it: every answer is a 201 or a
// retryable 502/503/504 problem, every 201 names a readable contact, and
// no request made more than one contact.
func TestFaultContactCreateServiceKilled(t *testing.T) {
	s := faultStack(t)
	adm := faultAdmin(t, s)
	domain := uniq("kill") + ".test"
	const clients, each = 3, 10
	var mu sync.Mutex
	var ids []int64
	attempts := 0
	var wg sync.WaitGroup
	step := make(chan int, clients*each)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r, err := adm.Do("POST", "/contacts", map[string]any{"first_name": "Kim", "last_name": "Killed", "email": fmt.Sprintf("c%d-%d@%s", c, i, domain)})
				mu.Lock()
				attempts++
				if err == nil && r.Status == http.StatusCreated {
					ids = append(ids, r.ID())
				} else {
					wantUnavailable(t, "create while contacts is killed", r, err)
				}
				mu.Unlock()
				step <- 1
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	for range 8 {
		<-step
	}
	s.Stop("contacts", true)
	time.Sleep(500 * time.Millisecond)
	if err := s.Restart(t.Context(), "contacts"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	n := count(t, s, "SELECT count(*) FROM contacts.contacts WHERE email LIKE $1", "%@"+domain)
	dups := count(t, s, "SELECT count(*) FROM (SELECT email FROM contacts.contacts WHERE email LIKE $1 GROUP BY email HAVING count(*) > 1) d", "%@"+domain)
	if n < len(ids) || n > attempts || dups != 0 {
		t.Fatalf("%d contacts for %d answered 201 of %d attempts (%d duplicated)", n, len(ids), attempts, dups)
	}
	for _, id := range ids {
		must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/contacts/%d", id), nil))
	}
	t.Logf("contacts killed mid-create: %d attempts, %d created (201), %d rows", attempts, len(ids), n)
}

// dbRoutes is one read per service that needs PostgreSQL, through the
// gateway.
var dbRoutes = map[string]string{
	"identity": "/users", "contacts": "/contacts", "leads": "/leads", "deals": "/deals",
	"contracts": "/contracts", "intake": "/intake/submissions", "mail": "/mailboxes",
}

// TestFaultPostgresCut cuts every service from PostgreSQL (the proxies in
// between refuse and drop connections; the shared server keeps running)
// and restores it: while cut, every service answers 503 problem+json (not
// 500) and a write torn mid-transaction too; afterwards every one answers
// again without being restarted.
func TestFaultPostgresCut(t *testing.T) {
	s := faultStack(t)
	adm := faultAdmin(t, s)
	pids := map[string]int{}
	for svc := range dbRoutes {
		pids[svc] = s.Pid(svc)
	}
	// Mid-transaction: contacts' connections are reset as soon as the
	// first statement of the write goes out.
	toxic(t, s.Faults.PG["contacts"], "torn", "reset_peer", "upstream", toxiclient.Attributes{"timeout": 0})
	r, err := adm.Do("POST", "/contacts", map[string]any{"first_name": "Tor", "last_name": "Ntransaction"})
	wantStatus503(t, "create with the transaction torn", r, err)
	if t.Failed() {
		t.Log(s.Logs("contacts"))
	}
	if err := s.Faults.Heal(); err != nil {
		t.Fatal(err)
	}

	for _, p := range s.Faults.PG {
		if err := p.Disable(); err != nil {
			t.Fatal(err)
		}
	}
	for svc, path := range dbRoutes {
		r, err := adm.Do("GET", path, nil)
		wantStatus503(t, svc+" with PostgreSQL cut", r, err)
	}
	if err := s.Faults.Heal(); err != nil {
		t.Fatal(err)
	}
	for svc, path := range dbRoutes {
		eventually(t, svc+" answers again", func() error {
			r, err := adm.Do("GET", path, nil)
			if err != nil {
				return err
			}
			if r.Status != http.StatusOK {
				return fmt.Errorf("%s", r)
			}
			return nil
		})
		if pid := s.Pid(svc); pid != pids[svc] {
			t.Errorf("%s was restarted (pid %d, was %d)", svc, pid, pids[svc])
		}
	}
}

func wantStatus503(t *testing.T, what string, r *Response, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if r.Status != http.StatusServiceUnavailable || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
		t.Errorf("%s: status %d %s, want a 503 problem", what, r.Status, r.Body)
	}
}

// TestFaultRedisDown stops the stack's Redis (a private redis-server;
// the shared one is never touched) and checks what docs/reliability.md
// documents: CRUD with a token issued before keeps working (JWTs are
// verified locally, rate limits fail open); login answers 503 rather than
// run unthrottled; events wait in the outbox and are published once Redis
// is back; logins, intake and rendering recover without restarts.
func TestFaultRedisDown(t *testing.T) {
	s := faultStack(t)
	adm := faultAdmin(t, s)
	key := must(t, http.StatusCreated)(adm.Do("POST", "/api-keys", map[string]any{"name": uniq("redis-form")}))
	pub := s.Client()
	pub.Header.Set("X-API-Key", key.Data()["key"].(string))
	deal, tpl := contractFixture(t, adm)

	s.Faults.Redis.Stop()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = s.Faults.Redis.Start(context.Background())
		}
	})

	c := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{"first_name": "Reddy", "last_name": "Down", "email": uniq("redis") + "@down.test"}))
	path := fmt.Sprintf("/contacts/%d", c.ID())
	must(t, http.StatusOK)(adm.Do("GET", path, nil))
	must(t, http.StatusOK)(adm.Do("PUT", path, map[string]any{"first_name": "Reddy", "last_name": "Still"}))
	must(t, http.StatusOK)(adm.Do("GET", "/contacts?search=reddy", nil))
	must(t, http.StatusOK)(adm.Do("DELETE", path, nil))
	if n := count(t, s, "SELECT count(*) FROM contacts.outbox WHERE published_at IS NULL"); n == 0 {
		t.Errorf("no event waits in the outbox while Redis is down")
	}

	observed := map[string]int{}
	for name, f := range map[string]func() (*Response, error){
		"login": func() (*Response, error) {
			return s.Client().Do("POST", "/auth/login", map[string]string{"email": AdminEmail, "password": AdminPassword})
		},
		"intake": func() (*Response, error) {
			return pub.Do("POST", "/public/leads", map[string]any{"first_name": "Rita", "last_name": "Redis", "email": uniq("rita") + "@down.test"})
		},
		"uncached pdf": func() (*Response, error) {
			ct, err := adm.Do("POST", "/contracts", map[string]any{"deal_id": deal, "template_id": tpl, "title": "Redis down"})
			if err != nil || ct.Status != http.StatusCreated {
				return ct, err
			}
			return adm.Do("GET", fmt.Sprintf("/contracts/%d/pdf", ct.ID()), nil)
		},
	} {
		r, err := f()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		observed[name] = r.Status
	}
	want := map[string]int{"login": http.StatusServiceUnavailable, "intake": http.StatusCreated, "uncached pdf": http.StatusServiceUnavailable}
	for name, status := range want {
		if observed[name] != status {
			t.Errorf("%s with Redis down: %d, want %d", name, observed[name], status)
		}
	}

	if err := s.Faults.Redis.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	restarted = true
	eventually(t, "the outbox drains", func() error {
		if n := count(t, s, "SELECT count(*) FROM contacts.outbox WHERE published_at IS NULL"); n != 0 {
			return fmt.Errorf("%d events unpublished", n)
		}
		return nil
	})
	faultAdmin(t, s)
	eventuallyPDF(t, adm, deal, tpl, 90*time.Second)
}

// contractFixture creates a company, deal and template for contracts.
func contractFixture(t *testing.T, adm *Client) (deal, tpl int64) {
	t.Helper()
	co := must(t, http.StatusCreated)(adm.Do("POST", "/companies", map[string]any{"name": uniq("Fault Co ")}))
	d := must(t, http.StatusCreated)(adm.Do("POST", "/deals", map[string]any{"title": "Fault deal", "value": "100.00", "company_id": co.ID()}))
	tp := must(t, http.StatusCreated)(adm.Do("POST", "/contract-templates", map[string]any{
		"name": uniq("Fault MSA "), "content": "<h1>Agreement</h1><p>{{deal.title}} {{contract.number}}</p>",
	}))
	return d.ID(), tp.ID()
}

// eventuallyPDF generates a contract and retries its PDF download, as a
// client honouring 503/504 would, until it is a PDF or within runs out.
func eventuallyPDF(t *testing.T, adm *Client, deal, tpl int64, within time.Duration) {
	t.Helper()
	ct := must(t, http.StatusCreated)(adm.Do("POST", "/contracts", map[string]any{"deal_id": deal, "template_id": tpl, "title": uniq("Eventually ")}))
	downloadEventually(t, adm, ct.ID(), within)
}

// downloadEventually retries a contract's PDF download until it succeeds:
// only retryable answers (502/503/504) are tolerated on the way.
func downloadEventually(t *testing.T, adm *Client, id int64, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for tries := 1; ; tries++ {
		r, err := adm.Do("GET", fmt.Sprintf("/contracts/%d/pdf", id), nil)
		if err == nil && r.Status == http.StatusOK && strings.HasPrefix(string(r.Body), "%PDF-") {
			return tries
		}
		if err == nil {
			wantUnavailable(t, "pdf download", r, nil)
		}
		if time.Now().After(deadline) {
			t.Fatalf("pdf of contract %d not downloadable after %s (%d tries): %v %v", id, within, tries, r, err)
		}
		time.Sleep(time.Second)
	}
}

// TestFaultIntakeKilled kills intake itself (SIGKILL) while three clients
// post public leads, and restarts it: every submission answered 201/202
// is exactly one lead, none is two, and a submission whose answer was lost
// with the process (the client saw a 502) is at most one lead.
func TestFaultIntakeKilled(t *testing.T) {
	s := faultStack(t)
	adm := faultAdmin(t, s)
	key := must(t, http.StatusCreated)(adm.Do("POST", "/api-keys", map[string]any{"name": uniq("kill-form")}))
	pub := s.Client()
	pub.Header.Set("X-API-Key", key.Data()["key"].(string))
	domain := uniq("intakekill") + ".test"
	var mu sync.Mutex
	var accepted []string
	attempts := 0
	var wg sync.WaitGroup
	step := make(chan int, 30)
	for c := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				email := fmt.Sprintf("c%d-%d@%s", c, i, domain)
				r, err := pub.Do("POST", "/public/leads", map[string]any{"first_name": "Ivy", "last_name": "Killed", "email": email})
				mu.Lock()
				attempts++
				if err == nil && (r.Status == http.StatusCreated || r.Status == http.StatusAccepted) {
					accepted = append(accepted, email)
				} else {
					wantUnavailable(t, "intake while it is killed", r, err)
				}
				mu.Unlock()
				step <- 1
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	for range 8 {
		<-step
	}
	s.Stop("intake", true)
	time.Sleep(300 * time.Millisecond)
	if err := s.Restart(t.Context(), "intake"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	eventually(t, "every accepted submission is a lead", func() error {
		for _, e := range accepted {
			if n := count(t, s, "SELECT count(*) FROM leads.leads WHERE email = $1", e); n != 1 {
				return fmt.Errorf("%s: %d leads", e, n)
			}
		}
		return nil
	})
	dups := count(t, s, "SELECT count(*) FROM (SELECT email FROM leads.leads WHERE email LIKE $1 GROUP BY email HAVING count(*) > 1) d", "%@"+domain)
	total := count(t, s, "SELECT count(*) FROM leads.leads WHERE email LIKE $1", "%@"+domain)
	if dups != 0 || total > attempts {
		t.Fatalf("%d leads (%d duplicated) for %d attempts", total, dups, attempts)
	}
	t.Logf("intake killed: %d attempts, %d accepted, %d leads", attempts, len(accepted), total)
}
