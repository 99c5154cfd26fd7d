package e2e

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// listDim is one equality filter of a list: its query parameter, its
// predicate in the table's SQL and the column (or expression) an index
// needs to answer it.
type listDim struct{ param, where, column string }

// comboCase is one combination of a list's equality filters.
type comboCase struct {
	name, query string
	where       []string // the predicates, for the floor's count(*)
	columns     []string // the floor's index: the filters' columns, then created_at
}

// combinations returns every non-empty subset of dims, each once without
// and once with the date range, the sort rotating through sorts.
func combinations(dims []listDim, sorts []string, dateFrom, dateTo string) []comboCase {
	var cases []comboCase
	for mask := 1; mask < 1<<len(dims); mask++ {
		for _, ranged := range []bool{false, true} {
			var names, params, where, columns []string
			for i, d := range dims {
				if mask&(1<<i) != 0 {
					names = append(names, strings.SplitN(d.param, "=", 2)[0])
					params = append(params, d.param)
					where = append(where, d.where)
					columns = append(columns, d.column)
				}
			}
			if ranged {
				names = append(names, "dates")
				params = append(params, "date_from="+dateFrom, "date_to="+dateTo)
				where = append(where, "created_at >= '"+dateFrom+"' AND created_at < date '"+dateTo+"' + 1")
			}
			columns = append(columns, "created_at")
			sort := sorts[len(cases)%len(sorts)]
			params = append(params, sort)
			cases = append(cases, comboCase{strings.Join(names, "+"), strings.Join(params, "&"), where, columns})
		}
	}
	return cases
}

// measureCombinations runs each case through the gateway (40 requests
// after a warm-up), then measures its floor: PostgreSQL's exact count(*)
// of the same predicate through an index made for it (the filters'
// columns, then created_at: an index-only scan of exactly the matching
// entries), built for the case and dropped after it. Target: gateway p95
// ≤ 50 ms; the floor is shown beside it, the physical limit of an exact
// total on this machine in the same minutes.
func measureCombinations(b *testing.B, c *pgx.Conn, adm *Client, path, table string, cases []comboCase, title string) {
	exec1(b, c, `SET jit = off`)
	exec1(b, c, `SET maintenance_work_mem = '512MB'`)
	defer exec1(b, c, `RESET jit`)
	var rows [][]string
	missed := 0
	only := caseFilter(b)
	b.ResetTimer()
	loggedIn := time.Now()
	for _, cc := range cases {
		if !only.MatchString(cc.name) {
			continue
		}
		if time.Since(loggedIn) > 5*time.Minute { // a run outlasts an access token
			adm, loggedIn = benchAdmin(b), time.Now()
		}
		var total float64
		get := func() error {
			r, err := adm.Do("GET", path+"?"+cc.query, nil)
			if err == nil && r.Status != 200 {
				err = fmt.Errorf("%s: %s", cc.name, r)
			}
			if err == nil {
				total, _ = r.JSON["total"].(float64)
			}
			return err
		}
		if err := get(); err != nil {
			b.Fatal(err)
		}
		p95 := pct(latencies(b, 40, get), 0.95)

		exec1(b, c, `CREATE INDEX bench_floor ON `+table+` (`+strings.Join(cc.columns, ", ")+`)`)
		count := `SELECT count(*) FROM ` + table + ` WHERE ` + strings.Join(cc.where, " AND ")
		var want float64
		start := time.Now()
		if err := c.QueryRow(context.Background(), count).Scan(&want); err != nil {
			b.Fatal(err)
		}
		if want != total {
			b.Fatalf("%s: total %.0f, count(*) %.0f", cc.name, total, want)
		}
		// A floor of seconds is far from the target either way: 10
		// counts of it bound a run's length (their p95 is their maximum).
		reps := 40
		if time.Since(start) > 250*time.Millisecond {
			reps = 10
		}
		floor := pct(latencies(b, reps, func() error {
			_, err := c.Exec(context.Background(), count)
			return err
		}), 0.95)
		schema, _, _ := strings.Cut(table, ".")
		exec1(b, c, `DROP INDEX `+schema+`.bench_floor`)

		verdict := "yes"
		if p95 > 50*time.Millisecond {
			verdict = "no"
			missed++
		}
		rows = append(rows, []string{cc.name, "`" + cc.query + "`", fmt.Sprintf("%.0f", total), ms(p95), ms(floor), verdict})
	}
	b.StopTimer()
	report(b, title, []string{"filters", "query", "total", "gateway p95 ms", "floor: count(*) with an index for the predicate, p95 ms", "met (≤ 50 ms)"}, rows)
	note(fmt.Sprintf("Target: p95 ≤ 50 ms with the exact total. %d of %d cases missed (cases matching CRM_BENCH_CASES=%q). A floor over 250 ms is the p95 of 10 counts, not 40.",
		missed, len(rows), only.String()))
	b.ReportMetric(float64(missed), "missed")
}

// caseFilter is $CRM_BENCH_CASES, a regular expression a case's name
// (its filters joined by +, e.g. "status+cf[tier]+dates") must match to
// run; every case without it.
func caseFilter(b *testing.B) *regexp.Regexp {
	re, err := regexp.Compile(os.Getenv("CRM_BENCH_CASES"))
	if err != nil {
		b.Fatalf("CRM_BENCH_CASES: %v", err)
	}
	return re
}

// BenchmarkListCombinations: every combination of the contact list's
// equality filters (status, source, owner, company, an enum custom
// field), each without and with a date range, sorted by each key in turn,
// through the gateway at 1,000,000 contacts, p95 ≤ 50 ms with an exact
// total; beside each, the floor of an exact count with an index made for
// that predicate.
func BenchmarkListCombinations(b *testing.B) {
	n := benchRows()
	c := superuser(b)
	b.Run("contacts", func(b *testing.B) {
		seedContacts(b, c, n)
		seedContactCustomFields(b, c, benchAdmin(b))
		adm := benchAdmin(b) // after the seed, which can outlast a token
		// The functions name their tables unqualified.
		exec1(b, c, `SET search_path = contacts, public`)
		exec1(b, c, `SELECT contact_cube_compact(), contact_counts_compact()`)
		exec1(b, c, `RESET search_path`)
		exec1(b, c, `VACUUM (ANALYZE) contacts.contacts`)
		from := time.Now().AddDate(0, 0, -120).Format(time.DateOnly)
		to := time.Now().AddDate(0, 0, -30).Format(time.DateOnly)
		dims := []listDim{
			{"status=active", "status = 'active'", "status"},
			{"source=event", "source = 'event'", "source"},
			{"assigned_to=1", "assigned_to = 1", "assigned_to"},
			{"company_id=78", "company_id = 78", "company_id"},
			{"cf[tier]=gold", "(custom_fields ->> 'tier') = 'gold'", "(custom_fields ->> 'tier')"},
		}
		sorts := []string{"sort_by=name", "sort_by=email&sort_dir=desc", "sort_by=created_at&sort_dir=desc",
			"sort_by=company_name", "sort_by=phone&sort_dir=desc", "sort_by=status", "sort_by=updated_at"}
		cases := combinations(dims, sorts, from, to)
		cases = append(cases,
			comboCase{"scope=me+status+source", "scope=me&status=active&source=web",
				[]string{"assigned_to = 1", "status = 'active'", "source = 'web'"}, []string{"assigned_to", "status", "source", "created_at"}},
			comboCase{"scope=me+tier+dates", "scope=me&cf[tier]=silver&date_from=" + from + "&date_to=" + to,
				[]string{"assigned_to = 1", "(custom_fields ->> 'tier') = 'silver'", "created_at >= '" + from + "' AND created_at < date '" + to + "' + 1"},
				[]string{"assigned_to", "(custom_fields ->> 'tier')", "created_at"}},
		)
		measureCombinations(b, c, adm, "/contacts", "contacts.contacts", cases,
			fmt.Sprintf("Contact list filter combinations through the gateway (%d contacts, 40 requests per case)", n))
	})
	b.Run("leads", func(b *testing.B) {
		seedLeads(b, c, n)
		seedLeadTier(b, c, benchAdmin(b))
		adm := benchAdmin(b)
		from := time.Now().AddDate(0, 0, -120).Format(time.DateOnly)
		to := time.Now().AddDate(0, 0, -30).Format(time.DateOnly)
		dims := []listDim{
			{"status=contacted", "status = 'contacted'", "status"},
			{"source=event", "lower(source) = 'event'", "lower(source)"},
			{"assigned_to=1007", "assigned_to = 1007", "assigned_to"},
			{"cf[tier]=gold", "(custom_fields ->> 'tier') = 'gold'", "(custom_fields ->> 'tier')"},
		}
		sorts := []string{"sort_by=name", "sort_by=email&sort_dir=desc", "sort_by=created_at&sort_dir=desc",
			"sort_by=company_name", "sort_by=assigned_to_name", "sort_by=source&sort_dir=desc", "sort_by=updated_at"}
		cases := combinations(dims, sorts, from, to)
		measureCombinations(b, c, adm, "/leads", "leads.leads", cases,
			fmt.Sprintf("Lead list filter combinations through the gateway (%d leads, 40 requests per case)", n))
	})
	b.Run("writes", func(b *testing.B) {
		seedContacts(b, c, n)
		seedContactCustomFields(b, c, benchAdmin(b))
		adm := benchAdmin(b)
		benchCubeWrites(b, c, adm)
	})
}

// benchCubeWrites: contact creates and updates through the gateway with
// the count cube's triggers on and off; target on/off ≥ 0.9. The cube is
// rebuilt afterwards.
// The enums triggers (contacts migrations 014, 015) are toggled with
// them: the cube reads what they write, and they are the other cost a
// list's enum filter puts on writes (the wider sort indexes are not
// toggled). Rows written with them off get their enums after.
func benchCubeWrites(b *testing.B, c *pgx.Conn, adm *Client) {
	ratio := benchTriggerWrites(b, c, adm, "the count cube's and the enums triggers",
		[]string{"contacts_cube_ins", "contacts_cube_upd", "contacts_cube_del", "contacts_enums", "contacts_enums_upd"})
	exec1(b, c, `SET search_path = contacts, public`)
	exec1(b, c, `UPDATE contacts SET enums = custom_field_enums('contacts', custom_fields) WHERE last_name LIKE 'off%'`)
	exec1(b, c, `RESET search_path`)
	rebuildContactCube(b, c)
	b.ReportMetric(ratio, "on/off")
}

// benchTriggerWrites times contact creates and updates through the
// gateway (4 clients) with triggers on contacts.contacts enabled and
// disabled, alternating rounds in the same run, reports the throughputs
// and returns on/off (target ≥ 0.9).
func benchTriggerWrites(b *testing.B, c *pgx.Conn, adm *Client, what string, triggers []string) float64 {
	const clients, perClient, rounds = 4, 150, 3
	toggle := func(op string) {
		for _, t := range triggers {
			exec1(b, c, `ALTER TABLE contacts.contacts `+op+` TRIGGER `+t)
		}
	}
	round := func(tag string) float64 {
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for w := 0; w < clients; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < perClient; i++ {
					r, err := adm.Do("POST", "/contacts", map[string]any{"first_name": "Cube", "last_name": fmt.Sprintf("%s%d-%d", tag, w, i),
						"status": "active", "source": "web", "custom_fields": map[string]any{"tier": "gold"}})
					if err == nil && r.Status != 201 {
						err = fmt.Errorf("create: %s", r)
					}
					if err == nil {
						r, err = adm.Do("PUT", fmt.Sprintf("/contacts/%d", r.ID()), map[string]any{"first_name": "Cube",
							"last_name": fmt.Sprintf("%s%d-%d", tag, w, i), "status": "inactive", "source": "event"})
						if err == nil && r.Status != 200 {
							err = fmt.Errorf("update: %s", r)
						}
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		return float64(clients*perClient) / time.Since(start).Seconds()
	}
	round("warm")
	var on, off float64
	for i := 0; i < rounds; i++ {
		on += round(fmt.Sprintf("on%d", i))
		toggle("DISABLE")
		off += round(fmt.Sprintf("off%d", i))
		toggle("ENABLE")
	}
	ratio := on / off
	report(b, "Contact writes with and without "+what+" (create + update through the gateway, 4 clients)",
		[]string{"triggers", "creates+updates per s (mean of 3 rounds)", "ratio"}, [][]string{
			{"on", fmt.Sprintf("%.0f", on/rounds), fmt.Sprintf("%.2f", ratio)},
			{"off", fmt.Sprintf("%.0f", off/rounds), "1"},
		})
	note(fmt.Sprintf("Target: on/off ≥ 0.9 (%s).", map[bool]string{true: "met", false: "not met"}[ratio >= 0.9]))
	return ratio
}

// seedLeadTier defines an enum custom field tier on leads and gives the
// seeded leads its values (gold, silver, bronze, none: a quarter each),
// written with the triggers off and the count cube recounted after, as
// no API write could give values to records before their field existed.
func seedLeadTier(b *testing.B, c *pgx.Conn, adm *Client) {
	seedOnce(b, "lead tier", func() {
		opts := []map[string]any{}
		for _, v := range []string{"gold", "silver", "bronze", "none"} {
			opts = append(opts, map[string]any{"value": v, "label": v})
		}
		if r, err := adm.Do("POST", "/properties/leads", map[string]any{"name": "tier", "label": "Tier", "type": "enum", "options": opts}); err != nil || r.Status != 201 {
			b.Fatalf("define tier: %v %v", r, err)
		}
		exec1(b, c, `BEGIN`)
		exec1(b, c, `SET LOCAL search_path = leads, public`)
		exec1(b, c, `ALTER TABLE leads DISABLE TRIGGER USER`)
		// enums too (leads migration 008): its trigger is off with the others.
		exec1(b, c, `UPDATE leads SET custom_fields = jsonb_build_object('tier', (ARRAY['gold','silver','bronze','none'])[1 + id % 4]),
			enums = jsonb_build_object('tier', (ARRAY['gold','silver','bronze','none'])[1 + id % 4])`)
		exec1(b, c, `ALTER TABLE leads ENABLE TRIGGER USER`)
		exec1(b, c, `SELECT lead_cube_recount()`)
		exec1(b, c, `COMMIT`)
		exec1(b, c, `VACUUM (ANALYZE) leads.leads`)
	})
}
