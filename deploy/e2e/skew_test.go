//go:build skew

package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The version skew tests (make test-skew: -tags skew -run TestSkew) run
// the current code beside the previous release (PreviousRelease: the
// newest tag v*.*.*, else PREV_REF), as a rolling deploy of one process
// does (docs/releasing.md "Version skew"):
//
//   - TestSkew: for every context, the gateway and the render worker in
//     turn, that one process at the previous release and every other at
//     the current code, then the reverse; each on a fresh stack, the
//     cross-context scenario (skewScenario) through the gateway.
//   - TestSkewMigrations: the current code migrates a database and runs
//     the scenario; then every process at the previous release against
//     that database (expand/contract: no release removes what the
//     previous one uses, and a rollback keeps the migrations) runs it.

// skewProcesses are the processes swapped one at a time.
var skewProcesses = append(append([]string{}, Services...), "gateway", "render")

var (
	prevOnce sync.Once
	prevRel  *Release
	prevErr  error
)

// previous builds (or finds in the cache) the previous release once.
func previous(t *testing.T) *Release {
	t.Helper()
	prevOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		start := time.Now()
		prevRel, prevErr = PreviousRelease(ctx, os.Getenv("PREV_REF"))
		if prevErr == nil {
			fmt.Printf("skew: previous release %s (%s), binaries in %s (%s)\n", prevRel.Ref, prevRel.Commit[:12], prevRel.BinDir, time.Since(start).Round(time.Second))
		}
	})
	if prevErr != nil {
		t.Fatal(prevErr)
	}
	return prevRel
}

// skewEnv is what the skew stacks' processes are started with.
func skewEnv() map[string]string {
	env := map[string]string{"CRM_RATE_LIMIT_USER_PER_MINUTE": "0", "CRM_RATE_LIMIT_IP_PER_MINUTE": "0"}
	maps.Copy(env, webhookEnv)
	return env
}

// startSkewStack starts every process, those in binaries from the
// directory named there. Each stack has a Redis of its own (the package's
// shared stack uses E2E_REDIS_URL).
func startSkewStack(t *testing.T, binaries map[string]string) *Stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	s, err := Start(ctx, builtBin, Options{Render: true, PrivateRedis: true, Env: skewEnv(), Binaries: binaries})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestSkew(t *testing.T) {
	rel := previous(t)
	for _, dir := range []struct {
		name string
		// binaries for the swapped process p.
		binaries func(p string) map[string]string
	}{
		{"previous-one", func(p string) map[string]string { return map[string]string{p: rel.BinDir} }},
		{"current-one", func(p string) map[string]string {
			m := map[string]string{}
			for _, o := range skewProcesses {
				if o != p {
					m[o] = rel.BinDir
				}
			}
			return m
		}},
	} {
		for _, p := range skewProcesses {
			t.Run(dir.name+"/"+p, func(t *testing.T) {
				start := time.Now()
				binaries := dir.binaries(p)
				s := startSkewStack(t, binaries)
				up := time.Since(start)
				checkBinaries(t, s, builtBin, binaries)
				skewScenario(t, s)
				t.Logf("stack up in %s, scenario %s", up.Round(100*time.Millisecond), (time.Since(start) - up).Round(100*time.Millisecond))
				if t.Failed() {
					for _, n := range skewProcesses {
						t.Logf("%s logs:\n%s", n, s.Logs(n))
					}
				}
			})
		}
	}
}

func TestSkewMigrations(t *testing.T) {
	rel := previous(t)
	s := startSkewStack(t, nil)
	checkBinaries(t, s, builtBin, nil)
	skewScenario(t, s)
	// Every process stops; the database keeps the current migrations.
	var wg sync.WaitGroup
	for _, n := range skewProcesses {
		wg.Go(func() { s.Stop(n, false) })
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	// One at a time, identity first: the others fetch its JWKS at start-up.
	old := refusesNewerSchema(t, rel)
	for _, n := range skewProcesses {
		startPrevious(ctx, t, s, n, rel.BinDir, old)
	}
	checkBinaries(t, s, rel.BinDir, nil)
	skewScenario(t, s)

	// Rolled forward again: the current code reads what the previous
	// release wrote on the current schema.
	for _, n := range skewProcesses {
		wg.Go(func() { s.Stop(n, false) })
	}
	wg.Wait()
	for _, n := range skewProcesses {
		s.SetBinaries(n, "")
		if err := s.StartProcess(ctx, n); err != nil {
			t.Fatal(err)
		}
		if err := s.WaitReady(ctx, n); err != nil {
			t.Fatalf("rolled forward: %v", err)
		}
	}
	checkBinaries(t, s, builtBin, nil)
	skewScenario(t, s)
}

// acceptsNewerSchema is the commit from which pkg/db.Migrate starts on a
// schema a later release migrated further.
const acceptsNewerSchema = "3c283b8"

// refusesNewerSchema reports a previous release older than
// acceptsNewerSchema: its migrator refuses the current schema, which no
// change can mend any more, so startPrevious only logs it.
func refusesNewerSchema(t *testing.T, rel *Release) bool {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "merge-base", "--is-ancestor", acceptsNewerSchema, rel.Commit)
	cmd.Dir = root
	return cmd.Run() != nil && exec.Command("git", "-C", root, "cat-file", "-e", acceptsNewerSchema+"^{commit}").Run() == nil
}

// tooNew is what pkg/db.Migrate said, before it accepted a schema a later
// release had migrated further, when it found one.
var tooNew = regexp.MustCompile(`db: migrate (\w+)\.(\w+): current version (\d+) is outside the valid versions of 0 to (\d+)`)

// startPrevious starts process n from dir and waits until it is ready. A
// previous release whose migrator refuses a newer schema is an error of
// the test (it cannot be rolled back to), unless it predates
// acceptsNewerSchema (refuses: logged, nothing can mend it); so that the same run still
// shows whether its code works on the current schema, the refused
// component's version row is then set back to the last migration that
// release knows — what a rollback to it needs by hand — and it is started
// again; once it is up, the rows are set forward again (a release checks
// them only at start-up) so that the current code can be started on it.
func startPrevious(ctx context.Context, t *testing.T, s *Stack, n, dir string, refuses bool) {
	t.Helper()
	s.SetBinaries(n, dir)
	restore := map[string]string{}
	setVersion := func(table, version string) {
		t.Helper()
		c, err := pgx.Connect(ctx, s.DatabaseURL)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, "UPDATE "+table+" SET version = $1", version); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		if err := s.StartProcess(ctx, n); err != nil {
			t.Fatal(err)
		}
		err := s.WaitReady(ctx, n)
		if err == nil {
			for table, version := range restore {
				setVersion(table, version)
			}
			return
		}
		m := tooNew.FindStringSubmatch(s.Logs(n))
		if m == nil {
			t.Fatalf("%s at the previous release on the current schema: %v", n, err)
		}
		report := t.Errorf
		if refuses {
			report = t.Logf // known, fixed by acceptsNewerSchema
		}
		report("%s at the previous release does not start on the current schema: %s.%s_schema_version is %s, it knows migrations up to %s (its pkg/db.Migrate refuses a newer schema, as every release before %s does); set back by hand to go on", n, m[1], m[2], m[3], m[4], acceptsNewerSchema)
		table := pgx.Identifier{m[1], m[2] + "_schema_version"}.Sanitize()
		restore[table] = m[3]
		setVersion(table, m[4])
	}
	t.Fatalf("%s at the previous release: not ready after 20 starts", n)
}

// checkBinaries asserts that every process runs the binary of the
// directory it was given (Linux: /proc/<pid>/exe).
func checkBinaries(t *testing.T, s *Stack, current string, binaries map[string]string) {
	t.Helper()
	for _, n := range skewProcesses {
		want := current
		if d, ok := binaries[n]; ok {
			want = d
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", s.Pid(n)))
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if filepath.Dir(exe) != filepath.Clean(want) {
			t.Fatalf("%s runs %s, want the binary in %s", n, exe, want)
		}
	}
}

// skewScenario is the cross-context scenario through s's gateway: login,
// a contact, two contacts of one batch call, a lead qualified into a
// contact, a company and a deal, a contract and its PDF (the render
// worker), public intake with an API key and an idempotency key, every
// contact's contact.created delivered signed to a local receiver and
// present in the events feed.
func skewScenario(t *testing.T, s *Stack) {
	t.Helper()
	c := s.Client()
	tok, err := c.Login(AdminEmail, AdminPassword)
	if err != nil {
		t.Fatal(err)
	}
	adm := c.With(tok)
	rc := newReceiver(t)
	_, secret := subscribe(t, adm, rc.srv.URL+"/hooks", "contact.created")

	email := uniq("skew") + "@skew.test"
	contact := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{"first_name": "Ske", "last_name": "W", "email": email}))
	if got := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/contacts/%d", contact.ID()), nil)); got.Data()["email"] != email {
		t.Fatalf("read back: %s", got)
	}
	contacts := []int64{contact.ID()}
	// Two contacts of one batch call: published together (one
	// contacts.imported carrying the records, where a previous release
	// published a contact.created each), each delivered and in the feed
	// as a contact.created whichever release reads the stream.
	created := must(t, http.StatusOK)(adm.Do("POST", "/contacts/batch/create", map[string]any{"inputs": []any{
		map[string]any{"first_name": "Bat", "last_name": "Ch", "email": uniq("batch") + "@skew.test"},
		map[string]any{"first_name": "Bat", "last_name": "Ch", "email": uniq("batch") + "@skew.test"},
	}}))
	results, _ := created.JSON["data"].([]any)
	for _, r := range results {
		rec, _ := r.(map[string]any)["record"].(map[string]any)
		id, ok := rec["id"].(float64)
		if !ok {
			t.Fatalf("batch create: %s", created)
		}
		contacts = append(contacts, int64(id))
	}
	if len(contacts) != 3 {
		t.Fatalf("batch create: %s", created)
	}

	lead := must(t, http.StatusCreated)(adm.Do("POST", "/leads", map[string]any{
		"first_name": "Quin", "last_name": "Lify", "email": uniq("quin") + "@skew.test", "company": uniq("Skew Corp ")}))
	q := must(t, http.StatusOK)(adm.Do("POST", fmt.Sprintf("/leads/%d/qualify", lead.ID()), map[string]any{
		"create_company": true, "create_deal": true, "deal_value": 4200}))
	dealID, _ := q.JSON["deal_id"].(float64)
	contactID, _ := q.JSON["contact_id"].(float64)
	if dealID == 0 || contactID == 0 {
		t.Fatalf("qualify: %s", q)
	}
	contacts = append(contacts, int64(contactID))
	must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/deals/%d", int64(dealID)), nil))
	must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/contacts/%d", int64(contactID)), nil))

	tpl := must(t, http.StatusCreated)(adm.Do("POST", "/contract-templates", map[string]any{
		"name": uniq("Skew MSA "), "content": "<h1>Agreement</h1><p>{{licensee.company_name}}: {{deal.title}}, No. {{contract.number}}</p>"}))
	ct := must(t, http.StatusCreated)(adm.Do("POST", "/contracts", map[string]any{"deal_id": int64(dealID), "template_id": tpl.ID(), "title": "Skew MSA"}))
	if pdf := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/contracts/%d/pdf", ct.ID()), nil)); !strings.HasPrefix(string(pdf.Body), "%PDF-") {
		t.Fatalf("pdf: %.200s", pdf.Body)
	}

	key := must(t, http.StatusCreated)(adm.Do("POST", "/api-keys", map[string]any{"name": uniq("skew form")}))
	pub := s.Client()
	pub.Header.Set("X-API-Key", fmt.Sprint(key.Data()["key"]))
	pub.Header.Set("Idempotency-Key", uniq("idem-"))
	body := map[string]any{"first_name": "Pub", "last_name": "Lic", "email": uniq("pub") + "@skew.test"}
	first := must(t, http.StatusCreated)(pub.Do("POST", "/public/leads", body))
	again := must(t, http.StatusCreated)(pub.Do("POST", "/public/leads", body))
	if again.ID() != first.ID() || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %s (first %s)", again, first)
	}
	must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/leads/%d", first.ID()), nil))

	settle := func(what string, f func() error) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := f()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s after 30 s: %v", what, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	settle("webhook deliveries", func() error {
		for _, id := range contacts {
			if n := len(rc.deliveries(func(d received) bool { return recordID(d) == id })); n != 1 {
				return fmt.Errorf("contact %d: %d deliveries", id, n)
			}
		}
		return nil
	})
	for _, d := range rc.deliveries(nil) {
		verify(t, secret, d)
		if d.Event.Type != "contact.created" {
			t.Errorf("delivery type %q", d.Event.Type)
		}
	}
	settle("events feed", func() error {
		r, err := adm.Do("GET", "/events?"+url.Values{"type": {"contact.created"}, "limit": {"1000"}}.Encode(), nil)
		if err != nil {
			return err
		}
		if r.Status != http.StatusOK {
			return fmt.Errorf("status %d: %s", r.Status, r.Body)
		}
		var seen []int64
		data, _ := r.JSON["data"].([]any)
		for _, e := range data {
			ev, _ := e.(map[string]any)
			rec, _ := ev["data"].(map[string]any)
			if id, ok := rec["id"].(float64); ok {
				seen = append(seen, int64(id))
			}
		}
		for _, id := range contacts {
			if !slices.Contains(seen, id) {
				return fmt.Errorf("contact %d not in the feed (%v)", id, seen)
			}
		}
		return nil
	})
}
