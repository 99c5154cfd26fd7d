//go:build bench

package store

// The list's statements, unnamed against prepared, side by side:
//
//	CRM_BENCH_ROWS=200000 go test -tags bench -run '^$' -bench ListStatements -benchtime 1x -timeout 30m ./internal/store/

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/list/listparam"
	"github.com/opencrm/crm/pkg/proccpu"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// listModeCase is one way of running the list's statements: how pgx sends
// them and the pool's plan_cache_mode.
type listModeCase struct {
	name      string
	exec      pgx.QueryExecMode
	planCache string // the pool's plan_cache_mode
}

var listModes = []listModeCase{
	{"unnamed", pgx.QueryExecModeExec, "auto"},
	{"prepared, custom plans", pgx.QueryExecModeCacheStatement, "force_custom_plan"},
	{"prepared, auto", pgx.QueryExecModeCacheStatement, "auto"},
	{"unnamed, described once", pgx.QueryExecModeCacheDescribe, "auto"},
}

// BenchmarkListStatements runs the same list requests through one store
// per mode, each on its own pool (its own connections, so each has its
// own statement cache), in alternating rounds, and reports per request the
// median time and the CPU time of the pool's PostgreSQL backends (read
// from /proc: this machine's server is local). Every mode must return the
// same page and total.
func BenchmarkListStatements(b *testing.B) {
	ctx := context.Background()
	n := 200_000
	if v, err := strconv.Atoi(os.Getenv("CRM_BENCH_ROWS")); err == nil && v > 0 {
		n = v
	}
	admin := testdb.New(b, Schema, Migrate, MigrationSets...)
	for _, q := range []string{
		`INSERT INTO companies (name, domain) SELECT 'Company ' || g, 'c' || g || '.test' FROM generate_series(1, 1000) g`,
		`INSERT INTO directory_users (id, name, email, role, team_id, active, updated_at)
			SELECT g, 'User ' || g, 'u' || g || '@crm.test', 'user', g % 5, true, now() FROM generate_series(1, 50) g`,
		// Sources are skewed: four common ones and a rare one (20 rows).
		fmt.Sprintf(`INSERT INTO contacts (first_name, last_name, email, phone, mobile, company_id, status, source,
				assigned_to, created_at, updated_at)
			SELECT (ARRAY['Ada','Alan','Grace','Linus','Barbara','Ken','Dennis','Margaret','Edsger','Donald'])[1 + g %% 10],
				'Surname' || (g %% 2000), 'person' || g || '@example' || (g %% 97) || '.test',
				'+1 555 ' || lpad((g %% 10000000)::text, 7, '0'), CASE WHEN g %% 3 = 0 THEN '+44 77 ' || g END,
				CASE WHEN g %% 4 <> 0 THEN 1 + g %% 1000 END,
				CASE WHEN g %% 5 = 0 THEN 'inactive' ELSE 'active' END,
				CASE WHEN g %% 10000 = 7 THEN 'fair' ELSE (ARRAY['web','referral','event','ads'])[1 + g %% 4] END,
				1 + g %% 50, timestamptz '2024-01-01' + (g || ' minutes')::interval, now()
			FROM generate_series(1, %d) g`, n),
		`VACUUM ANALYZE contacts`,
		`VACUUM ANALYZE companies`,
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	team := int64(2)
	queries := []string{
		"", "sort_by=created_at&sort_dir=desc&page=5", "status=inactive&sort_by=email",
		"source=event", "source=fair", "status=active&source=fair&sort_by=created_at",
		"company_id=78", "assigned_to=7&sort_by=phone", "scope=team",
		"search=surname1234", "search=person4242", "search=company%2077",
		"date_from=2024-02-01&date_to=2024-02-07", "page=400&per_page=100",
	}
	stores := make([]*Store, len(listModes))
	apps := make([]string, len(listModes))
	for i, m := range listModes {
		apps[i] = fmt.Sprintf("listbench%d", i)
		u, err := url.Parse(admin.Config().ConnString())
		if err != nil {
			b.Fatal(err)
		}
		v := u.Query()
		v.Set("application_name", apps[i])
		v.Set("plan_cache_mode", m.planCache)
		u.RawQuery = v.Encode()
		d, err := db.Open(ctx, u.String(), Schema, 2)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(d.Close)
		stores[i] = &Store{db: d, log: slog.Default(), listMode: m.exec}
	}
	filterOf := func(q string) contacts.Filter {
		v, err := url.ParseQuery(q)
		if err != nil {
			b.Fatal(err)
		}
		p := listparam.Parse(v, listparam.Options{Sorts: contacts.ContactSorts, DefaultSort: contacts.DefaultSort, Sync: true})
		return contacts.Filter{Query: p.Query(), Status: p.Enum("status", "active", "inactive"), CompanyID: p.Int64("company_id"),
			AssignedTo: p.Int64("assigned_to"), Source: p.String("source"), Caller: 7, CallerTeam: &team}
	}
	backendCPU := func(app string) time.Duration {
		rows, err := admin.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
		if err != nil {
			b.Fatal(err)
		}
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			b.Fatal(err)
		}
		return proccpu.Sum(pids)
	}
	const warm, calls = 10, 200
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("CRM_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%d contacts; per request: median ms / PostgreSQL CPU µs; %d rounds × %d requests per mode, modes rotated; load average %s\n\n",
		n, rounds, calls, proccpu.LoadAvg())
	fmt.Fprintf(&out, "| query |")
	for _, m := range listModes {
		fmt.Fprintf(&out, " %s |", m.name)
	}
	for _, m := range listModes[1:] {
		fmt.Fprintf(&out, " CPU %s / unnamed |", m.name)
	}
	fmt.Fprintf(&out, "\n|---|%s%s\n", strings.Repeat("---|", len(listModes)), strings.Repeat("---|", len(listModes)-1))
	totalCPU := make([]time.Duration, len(listModes))
	b.ResetTimer()
	for _, q := range queries {
		f := filterOf(q)
		var want []int64
		wantTotal := -1
		times := make([][]time.Duration, len(listModes))
		cpu := make([]time.Duration, len(listModes))
		run := func(i int) {
			list, total, err := stores[i].ListContacts(ctx, f)
			if err != nil {
				b.Fatalf("%s, %s: %v", q, listModes[i].name, err)
			}
			ids := make([]int64, len(list))
			for j, c := range list {
				ids[j] = c.ID
			}
			if wantTotal < 0 {
				want, wantTotal = ids, total
			} else if diff := cmp.Diff(want, ids); diff != "" || total != wantTotal {
				b.Fatalf("%s, %s: total %d, want %d; page (-want +got):\n%s", q, listModes[i].name, total, wantTotal, diff)
			}
		}
		for i := range listModes {
			for range warm {
				run(i)
			}
		}
		for r := range rounds {
			for k := range listModes {
				i := (k + r) % len(listModes)
				before := backendCPU(apps[i])
				for range calls {
					start := time.Now()
					run(i)
					times[i] = append(times[i], time.Since(start))
				}
				cpu[i] += backendCPU(apps[i]) - before
			}
		}
		per := float64(rounds * calls)
		fmt.Fprintf(&out, "| `%s` |", q)
		for i := range listModes {
			slices.Sort(times[i])
			fmt.Fprintf(&out, " %.2f / %.0f |", float64(times[i][len(times[i])/2].Microseconds())/1000, float64(cpu[i].Microseconds())/per)
			totalCPU[i] += cpu[i]
		}
		for i := range listModes[1:] {
			fmt.Fprintf(&out, " %.2f |", cpu[i+1].Seconds()/cpu[0].Seconds())
		}
		fmt.Fprintln(&out)
	}
	b.StopTimer()
	fmt.Fprintf(&out, "\nAll queries, PostgreSQL CPU against unnamed:")
	for i, m := range listModes[1:] {
		fmt.Fprintf(&out, " %s %.3f;", m.name, totalCPU[i+1].Seconds()/totalCPU[0].Seconds())
	}
	fmt.Fprintf(&out, " load average %s\n", proccpu.LoadAvg())
	fmt.Print(out.String())
	b.ReportMetric(totalCPU[1].Seconds()/totalCPU[0].Seconds(), "cpu-custom/unnamed")
}
