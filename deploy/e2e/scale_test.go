//go:build scale

package e2e

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// The scale tests (make test-scale: -tags scale -run TestScale) run the
// platform as two replicas of every process — the gateway and the render
// worker too — behind a local HAProxy, as make run REPLICAS=2 does, and
// prove that the replicas behave as one: outbox relays, asynq workers,
// webhook dispatch and rate limits share their work through PostgreSQL
// and Redis only.

// scaleEnv is what the scale stacks' processes are started with: webhook
// receivers on receiverHost, IMAP sync from loopback, and no per-user or per-IP quota (the load
// client is one user on one address; the per-key quota is tested).
func scaleEnv() map[string]string {
	env := map[string]string{"CRM_RATE_LIMIT_USER_PER_MINUTE": "0", "CRM_RATE_LIMIT_IP_PER_MINUTE": "0"}
	maps.Copy(env, webhookEnv)
	// Mail syncs from the test IMAP server on loopback, sweeping every
	// second, a killed sync's lease 10 s.
	maps.Copy(env, mailKillEnv)
	return env
}

// startScaleStack starts two replicas of every process behind HAProxy.
func startScaleStack(t *testing.T, dbURLs map[string]string) *Stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	// A Redis of its own: the package's shared stack (TestMain) uses
	// E2E_REDIS_URL, and two stacks on one Redis database would share
	// streams and queues.
	s, err := Start(ctx, builtBin, Options{Render: true, Replicas: 2, PrivateRedis: true, Env: scaleEnv(), DatabaseURLs: dbURLs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// scaleAdmin logs in as the bootstrap admin of s.
func scaleAdmin(t *testing.T, s *Stack) *Client {
	t.Helper()
	c := s.Client()
	tok, err := c.Login(AdminEmail, AdminPassword)
	if err != nil {
		t.Fatal(err)
	}
	return c.With(tok)
}

// settle retries f until it returns nil or d passes.
func settle(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after %s: %v", what, d, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// scenario is what the cross-context scenario made, for the checks.
type scenario struct {
	adm      *Client
	rc       *receiver
	secret   string
	contacts []int64 // contact ids whose contact.created must be delivered
	contract int64
	apiKey   string
}

// runScenario runs the cross-context scenario through the gateway's
// frontend: login, a contact, a qualified lead, a contract and its PDF,
// public intake with an idempotency key, webhook deliveries and the
// events feed. contactsDB is contacts' database (superuser).
func runScenario(t *testing.T, s *Stack, contactsDB string) *scenario {
	t.Helper()
	sc := &scenario{adm: scaleAdmin(t, s), rc: newReceiver(t)}
	adm := sc.adm
	_, sc.secret = subscribe(t, adm, sc.rc.srv.URL+"/hooks", "contact.created")

	// A contact, read back through both gateways several times.
	email := uniq("scale") + "@scale.test"
	c := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{"first_name": "Sca", "last_name": "Le", "email": email}))
	for range 4 {
		if got := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/contacts/%d", c.ID()), nil)); got.Data()["email"] != email {
			t.Fatalf("read back: %s", got)
		}
	}
	sc.contacts = append(sc.contacts, c.ID())

	// A lead qualified into a contact, a company and a deal.
	company := uniq("Scale Corp ")
	lead := must(t, http.StatusCreated)(adm.Do("POST", "/leads", map[string]any{
		"first_name": "Quin", "last_name": "Lify", "email": uniq("quin") + "@scale.test", "company": company}))
	q := must(t, http.StatusOK)(adm.Do("POST", fmt.Sprintf("/leads/%d/qualify", lead.ID()), map[string]any{
		"create_company": true, "create_deal": true, "deal_value": 4200}))
	dealID := int64(q.JSON["deal_id"].(float64))
	sc.contacts = append(sc.contacts, int64(q.JSON["contact_id"].(float64)))
	must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/deals/%d", dealID), nil))

	// A contract for the deal and its PDF, rendered by a render replica.
	tpl := must(t, http.StatusCreated)(adm.Do("POST", "/contract-templates", map[string]any{
		"name": uniq("Scale MSA "), "content": "<h1>Agreement</h1><p>{{licensee.company_name}}: {{deal.title}}, No. {{contract.number}}</p>"}))
	ct := must(t, http.StatusCreated)(adm.Do("POST", "/contracts", map[string]any{"deal_id": dealID, "template_id": tpl.ID(), "title": "Scale MSA"}))
	sc.contract = ct.ID()
	if pdf := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/contracts/%d/pdf", ct.ID()), nil)); !strings.HasPrefix(string(pdf.Body), "%PDF-") {
		t.Fatalf("pdf: %.200s", pdf.Body)
	}

	// Public intake with an idempotency key: the replay (to whichever
	// replicas) answers the same lead.
	key := must(t, http.StatusCreated)(adm.Do("POST", "/api-keys", map[string]any{"name": uniq("scale form")}))
	sc.apiKey, _ = key.Data()["key"].(string)
	pub := s.Client()
	pub.Header.Set("X-API-Key", sc.apiKey)
	pub.Header.Set("Idempotency-Key", uniq("idem-"))
	body := map[string]any{"first_name": "Pub", "last_name": "Lic", "email": uniq("pub") + "@scale.test"}
	first := must(t, http.StatusCreated)(pub.Do("POST", "/public/leads", body))
	for range 3 {
		again := must(t, http.StatusCreated)(pub.Do("POST", "/public/leads", body))
		if again.ID() != first.ID() || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %s (first %s)", again, first)
		}
	}

	// Both contacts' contact.created reach the receiver once each, signed,
	// and the events feed has them once each.
	settle(t, 30*time.Second, "webhook deliveries", func() error {
		for _, id := range sc.contacts {
			if n := len(sc.rc.deliveries(func(d received) bool { return recordID(d) == id })); n != 1 {
				return fmt.Errorf("contact %d: %d deliveries", id, n)
			}
		}
		return nil
	})
	for _, d := range sc.rc.deliveries(nil) {
		verify(t, sc.secret, d)
	}
	settle(t, 30*time.Second, "events feed", func() error {
		seen := feedCounts(t, adm, "contact.created")
		for _, id := range sc.contacts {
			if seen[id] != 1 {
				return fmt.Errorf("contact %d in the feed %d times", id, seen[id])
			}
		}
		return nil
	})
	checkOneEach(t, contactsDB, "contacts.contacts", "email", []string{email})
	return sc
}

// feedCounts pages through the events feed for typ and counts each
// record id.
func feedCounts(t *testing.T, c *Client, typ string) map[int64]int {
	t.Helper()
	seen := map[int64]int{}
	after := ""
	for range 1000 {
		q := url.Values{"type": {typ}, "limit": {"1000"}}
		if after != "" {
			q.Set("after", after)
		}
		r := must(t, http.StatusOK)(c.Do("GET", "/events?"+q.Encode(), nil))
		data, _ := r.JSON["data"].([]any)
		if len(data) == 0 {
			return seen
		}
		for _, e := range data {
			ev := e.(map[string]any)
			id, _ := ev["data"].(map[string]any)["id"].(float64)
			seen[int64(id)]++
			after, _ = ev["id"].(string)
		}
	}
	t.Fatal("events feed: more than 1000 pages")
	return nil
}

// checkOneEach asserts that table holds exactly one row per value of
// column (compared case-insensitively).
func checkOneEach(t *testing.T, dbURL, table, column string, values []string) {
	t.Helper()
	if len(values) == 0 {
		return
	}
	got := countBy(t, dbURL, table, column, values)
	for _, v := range values {
		if got[strings.ToLower(v)] != 1 {
			t.Errorf("%s.%s = %q: %d rows, want 1", table, column, v, got[strings.ToLower(v)])
		}
	}
}

func countBy(t *testing.T, dbURL, table, column string, values []string) map[string]int {
	t.Helper()
	c, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	lower := make([]string, len(values))
	for i, v := range values {
		lower[i] = strings.ToLower(v)
	}
	rows, err := c.Query(t.Context(), fmt.Sprintf(`SELECT lower(%s), count(*) FROM %s WHERE lower(%s) = ANY($1) GROUP BY 1`, column, table, column), lower)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for rows.Next() {
		var v string
		var n int
		if err := rows.Scan(&v, &n); err != nil {
			t.Fatal(err)
		}
		got[v] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// doubleQualify qualifies n leads, each by two concurrent requests (to
// whichever replicas HAProxy picks): one succeeds, the other answers 409
// already_qualified or the same result, and each lead gives one contact,
// one company and one deal.
func doubleQualify(t *testing.T, s *Stack, adm *Client, contactsDB string, n int) {
	t.Helper()
	type lead struct {
		id             int64
		email, company string
	}
	leads := make([]lead, n)
	for i := range leads {
		l := lead{email: uniq(fmt.Sprintf("dq%d-", i)) + "@scale.test", company: uniq(fmt.Sprintf("DQ %d Corp ", i))}
		l.id = must(t, http.StatusCreated)(adm.Do("POST", "/leads", map[string]any{
			"first_name": "Dou", "last_name": "Ble", "email": l.email, "company": l.company})).ID()
		leads[i] = l
	}
	var wg sync.WaitGroup
	results := make([][2]*Response, n)
	start := make(chan struct{})
	for i, l := range leads {
		for j := range 2 {
			wg.Go(func() {
				<-start
				r, err := adm.Do("POST", fmt.Sprintf("/leads/%d/qualify", l.id), map[string]any{
					"create_company": true, "create_deal": true, "deal_value": 100})
				if err != nil {
					t.Error(err)
					return
				}
				results[i][j] = r
			})
		}
	}
	close(start)
	wg.Wait()
	var emails, companies []string
	for i, l := range leads {
		ok := 0
		for _, r := range results[i] {
			switch {
			case r == nil:
			case r.Status == http.StatusOK:
				ok++
			case r.Status == http.StatusConflict && (r.JSON["code"] == "already_qualified" || r.JSON["code"] == "qualification_in_progress"):
			default:
				t.Errorf("lead %d: qualify answered %s\n%s", l.id, r, s.logsOf(r.JSON["request_id"]))
			}
		}
		if ok < 1 {
			// The loser may have answered 409 while the winner was still
			// running, and the winner too if both raced: a retry settles.
			r := must(t, http.StatusConflict)(adm.Do("POST", fmt.Sprintf("/leads/%d/qualify", l.id), map[string]any{
				"create_company": true, "create_deal": true, "deal_value": 100}))
			if r.JSON["code"] != "already_qualified" {
				t.Errorf("lead %d: neither request qualified it: %s", l.id, r)
			}
		}
		emails = append(emails, l.email)
		companies = append(companies, l.company)
	}
	checkOneEach(t, contactsDB, "contacts.contacts", "email", emails)
	checkOneEach(t, contactsDB, "contacts.companies", "name", companies)
	// One deal per company.
	c, err := pgx.Connect(t.Context(), contactsDB)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var ids []int64
	if err := c.QueryRow(t.Context(), `SELECT coalesce(array_agg(id), '{}') FROM contacts.companies WHERE name = ANY($1)`, companies).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	d, err := pgx.Connect(t.Context(), s.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	rows, err := d.Query(t.Context(), `SELECT company_id, count(*) FROM deals.deals WHERE company_id = ANY($1) GROUP BY 1`, ids)
	if err != nil {
		t.Fatal(err)
	}
	perCompany, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
		ID int64
		N  int
	}])
	if err != nil {
		t.Fatal(err)
	}
	if len(perCompany) != n {
		t.Errorf("deals for %d companies, want %d", len(perCompany), n)
	}
	for _, pc := range perCompany {
		if pc.N != 1 {
			t.Errorf("company %d: %d deals, want 1", pc.ID, pc.N)
		}
	}
}

// checkLimits proves the per-key quota and the login-failure limit are
// counted once across the gateway's and identity's replicas.
func checkLimits(t *testing.T, s *Stack, adm *Client) {
	t.Helper()
	const perMinute = 10
	key := must(t, http.StatusCreated)(adm.Do("POST", "/api-keys", map[string]any{"name": uniq("scale quota"), "rate_limit_per_minute": perMinute}))
	pub := s.Client()
	pub.Header.Set("X-API-Key", key.Data()["key"].(string))
	// Start at the beginning of a window, so the burst stays in one.
	probe := must(t, http.StatusUnprocessableEntity)(pub.Do("POST", "/public/leads", map[string]any{}))
	if reset := probe.Header.Get("RateLimit-Reset"); reset != "" {
		var secs int
		if _, err := fmt.Sscan(reset, &secs); err == nil && secs < 20 {
			time.Sleep(time.Duration(secs+1) * time.Second)
		}
	}
	statuses := map[int]int{}
	for range 2 * perMinute {
		r, err := pub.Do("POST", "/public/leads", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		statuses[r.Status]++
	}
	// The probe counted if it fell in the same window.
	if got := statuses[http.StatusUnprocessableEntity]; got != perMinute && got != perMinute-1 {
		t.Errorf("per-key quota of %d across two gateways: %v", perMinute, statuses)
	}
	if statuses[http.StatusTooManyRequests] < perMinute {
		t.Errorf("per-key quota: %v, want at least %d answers 429", statuses, perMinute)
	}

	// Login failures per e-mail and address: 10 per 15 minutes by default.
	email := uniq("nobody") + "@scale.test"
	logins := map[int]int{}
	for range 14 {
		r, err := s.Client().Do("POST", "/auth/login", map[string]string{"email": email, "password": "wrong-password-123"})
		if err != nil {
			t.Fatal(err)
		}
		logins[r.Status]++
	}
	if logins[http.StatusUnauthorized] != 10 || logins[http.StatusTooManyRequests] != 4 {
		t.Errorf("login failures across two identity replicas: %v, want 10 × 401 then 4 × 429", logins)
	}
}

// haproxyStatus is the status HAProxy's stats give a server of a backend.
func haproxyStatus(s *Stack, backend, server string) (string, error) {
	resp, err := http.Get(s.HAProxyStats() + "/;csv")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	recs, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil {
		return "", err
	}
	if len(recs) == 0 {
		return "", fmt.Errorf("empty stats")
	}
	col := slices.Index(recs[0], "status")
	for _, r := range recs[1:] {
		if len(r) > col && r[0] == backend && r[1] == server {
			return r[col], nil
		}
	}
	return "", fmt.Errorf("no server %s/%s", backend, server)
}

// streamCounts counts every event id on each of the streams.
func streamCounts(t *testing.T, s *Stack, streams []string) map[string]map[int64]int {
	t.Helper()
	opt, err := redis.ParseURL(s.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	out := map[string]map[int64]int{}
	for _, k := range streams {
		out[k] = map[int64]int{}
		start := "-"
		for {
			msgs, err := rdb.XRangeN(t.Context(), k, start, "+", 1000).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				var ev struct {
					ID int64 `json:"id"`
				}
				if err := json.Unmarshal([]byte(fmt.Sprint(m.Values["event"])), &ev); err != nil {
					t.Fatalf("%s %s: %v", k, m.ID, err)
				}
				out[k][ev.ID]++
			}
			if len(msgs) < 1000 {
				break
			}
			start = "(" + msgs[len(msgs)-1].ID
		}
	}
	return out
}

// checkOutbox asserts every outbox row of every context is published and
// on its stream exactly once.
func checkOutbox(t *testing.T, s *Stack, dbURLs map[string]string) (events int) {
	t.Helper()
	type row struct {
		stream string
		id     int64
	}
	var rows []row
	unpublished := func() (int, error) {
		rows = rows[:0]
		pending := 0
		for _, n := range Services {
			u := s.DatabaseURL
			if v, ok := dbURLs[n]; ok {
				u = v
			}
			c, err := pgx.Connect(t.Context(), u)
			if err != nil {
				return 0, err
			}
			var exists bool
			if err := c.QueryRow(t.Context(), `SELECT to_regclass($1) IS NOT NULL`, n+".outbox").Scan(&exists); err != nil || !exists {
				c.Close(context.Background())
				if err != nil {
					return 0, err
				}
				continue
			}
			rs, err := c.Query(t.Context(), fmt.Sprintf(`SELECT stream, id, published_at IS NULL FROM %s.outbox`, n))
			if err != nil {
				c.Close(context.Background())
				return 0, err
			}
			for rs.Next() {
				var r row
				var open bool
				if err := rs.Scan(&r.stream, &r.id, &open); err != nil {
					rs.Close()
					c.Close(context.Background())
					return 0, err
				}
				if open {
					pending++
				}
				rows = append(rows, r)
			}
			rs.Close()
			c.Close(context.Background())
		}
		return pending, nil
	}
	settle(t, 30*time.Second, "every outbox row published", func() error {
		n, err := unpublished()
		if err == nil && n > 0 {
			err = fmt.Errorf("%d rows not yet published", n)
		}
		return err
	})
	// Several contexts may publish to one stream (crm:audit), each
	// numbering its own outbox: an id is on a stream as often as outbox
	// rows of all contexts have it.
	want := map[row]int{}
	for _, r := range rows {
		want[r]++
	}
	streams := slices.Sorted(func(yield func(string) bool) {
		seen := map[string]bool{}
		for r := range want {
			if !seen[r.stream] {
				seen[r.stream] = true
				if !yield(r.stream) {
					return
				}
			}
		}
	})
	counts := streamCounts(t, s, streams)
	dups := 0
	for r, w := range want {
		switch n := counts[r.stream][r.id]; {
		case n < w:
			t.Errorf("outbox %s #%d: published by %d contexts, on its stream %d times", r.stream, r.id, w, n)
		case n > w:
			dups++
			t.Errorf("outbox %s #%d: published by %d contexts, on its stream %d times", r.stream, r.id, w, n)
		}
	}
	t.Logf("outbox: %d events relayed on %d streams (%s), %d duplicated", len(rows), len(streams), strings.Join(streams, ", "), dups)
	return len(rows)
}

// checkExpiryOnce asserts that contracts' daily expiry ran once today on
// its queue although every contracts replica enqueued the day's run at
// start (and the restarted one again): asynq's processed counter of the
// queue for the day, and the day's task among the completed.
func checkExpiryOnce(t *testing.T, s *Stack) {
	t.Helper()
	opt, err := redis.ParseURL(s.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	day := time.Now().UTC().Format("2006-01-02")
	settle(t, 30*time.Second, "the day's expiry run", func() error {
		done, err := rdb.ZRange(t.Context(), "asynq:{contracts}:completed", 0, -1).Result()
		if err != nil {
			return err
		}
		if !slices.Contains(done, "contracts:"+day) {
			return fmt.Errorf("completed tasks %v lack contracts:%s", done, day)
		}
		return nil
	})
	n, err := rdb.Get(t.Context(), "asynq:{contracts}:processed:"+day).Int()
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("contracts' queue processed %d tasks today, want the one expiry run", n)
	}
}

// logsOf is every replica's log lines that name a request id.
func (s *Stack) logsOf(requestID any) string {
	id, _ := requestID.(string)
	if id == "" {
		return ""
	}
	var out []string
	for _, n := range append(append([]string{}, Services...), "render", "gateway") {
		for _, rn := range s.Replicas(n) {
			for _, line := range strings.Split(s.Logs(rn), "\n") {
				if strings.Contains(line, id) {
					out = append(out, rn+": "+line)
				}
			}
		}
	}
	return strings.Join(out, "\n")
}
