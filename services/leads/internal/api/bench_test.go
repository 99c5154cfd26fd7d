package api_test

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/directory"
)

// benchRows is the list benchmark's table size: CRM_BENCH_ROWS (1000000 for
// the documented numbers), else a small table so a plain -bench run stays
// quick. See docs/benchmarks.md.
func benchRows() int {
	if n, err := strconv.Atoi(os.Getenv("CRM_BENCH_ROWS")); err == nil && n > 0 {
		return n
	}
	return 2000
}

// seed fills the table in one statement with realistic names (so trigram
// selectivity is realistic), 50 assignees and spread-out creation times.
func seed(b *testing.B, e *env, n int) {
	b.Helper()
	ctx := context.Background()
	d := e.store.DB()
	now := time.Now()
	for i := int64(10); i < 60; i++ {
		team := i % 5
		u := directory.User{ID: i, Name: "Owner " + strconv.FormatInt(i*37%101, 10), Email: "o" + strconv.FormatInt(i, 10) + "@x.example",
			Role: "user", TeamID: &team, Active: true, UpdatedAt: now}
		if err := directory.Upsert(ctx, d, u); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	_, err := d.Exec(ctx, `
WITH f AS (SELECT ARRAY['James','Mary','John','Patricia','Robert','Jennifer','Michael','Linda','William','Elizabeth',
  'David','Barbara','Richard','Susan','Joseph','Jessica','Thomas','Sarah','Charles','Karen','Chris','Nancy','Daniel',
  'Lisa','Matthew','Betty','Anthony','Margaret','Mark','Sandra','Paul','Ashley','Steven','Kim','Andrew','Emily',
  'Kenneth','Donna','Joshua','Michelle'] AS a),
l AS (SELECT ARRAY['Smith','Johnson','Williams','Brown','Jones','Garcia','Miller','Davis','Rodriguez','Martinez',
  'Hernandez','Lopez','Gonzalez','Wilson','Anderson','Thomas','Taylor','Moore','Jackson','Martin','Lee','Perez',
  'Thompson','White','Harris','Sanchez','Clark','Ramirez','Lewis','Robinson','Walker','Young','Allen','King',
  'Wright','Scott','Torres','Nguyen','Hill','Flores','Green','Adams','Nelson','Baker','Hall','Rivera','Campbell',
  'Mitchell','Carter','Roberts','Gomez','Phillips','Evans','Turner','Diaz','Parker','Cruz','Edwards','Collins','Reyes'] AS a)
INSERT INTO leads (first_name, last_name, email, phone, company, source, status, assigned_to, assigned_to_name, created_at)
SELECT f.a[1 + g % 40], l.a[1 + (g / 40) % 60],
       CASE WHEN g % 10 = 0 THEN NULL ELSE lower(f.a[1 + g % 40]) || '.' || lower(l.a[1 + (g / 40) % 60]) || g || '@mail' || (g % 97) || '.example' END,
       '+1 555 ' || lpad((g % 10000000)::text, 7, '0'),
       CASE WHEN g % 7 = 0 THEN NULL ELSE 'Company ' || (g * 7919 % 20000) || ' Ltd' END,
       (ARRAY['web','referral','event','ads','partner'])[1 + g % 5],
       (ARRAY['new','contacted','qualified','disqualified'])[1 + g % 4],
       CASE WHEN g % 9 = 0 THEN NULL ELSE 10 + g % 50 END,
       CASE WHEN g % 9 = 0 THEN NULL ELSE 'Owner ' || ((10 + g % 50) * 37 % 101) END,
       now() - make_interval(secs => g * 31)
FROM generate_series(1::bigint, $1) g, f, l`, n)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := d.Exec(ctx, `VACUUM ANALYZE leads`); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d leads in %s", n, time.Since(start).Round(time.Second))
}

func p95(lat []time.Duration) float64 {
	slices.Sort(lat)
	return float64(lat[(len(lat)*95)/100]) / float64(time.Millisecond)
}

// BenchmarkLeadList measures GET /leads at the HTTP layer (httptest, real
// PostgreSQL) for every sort in both directions and typical searches; it
// reports the p95 latency per request as p95_ms.
func BenchmarkLeadList(b *testing.B) {
	e := newEnv(b)
	seed(b, e, benchRows())
	var queries []string
	for _, s := range []string{"name", "email", "company_name", "status", "source", "assigned_to_name", "created_at"} {
		queries = append(queries, "sort_by="+s, "sort_by="+s+"&sort_dir=desc")
	}
	queries = append(queries,
		"search=smith",                     // a common last name: ~1.7 % of rows
		"search=patricia%20garcia",         // full name
		"search=mary.jones1234",            // an email prefix
		"search=company%2012345",           // a company
		"search=555%200123",                // a phone fragment
		"search=nguyen&sort_by=created_at", // search with another sort
		"status=contacted&sort_by=assigned_to_name&sort_dir=desc",
		"scope=team&sort_by=name",
	)
	for _, q := range queries {
		b.Run(q, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				page := strconv.Itoa(1 + i%5)
				t0 := time.Now()
				r := e.do("GET", "/leads?per_page=25&page="+page+"&"+q, e.user, nil)
				lat = append(lat, time.Since(t0))
				if r.status != http.StatusOK {
					b.Fatalf("%s: %d %s", q, r.status, r.body)
				}
			}
			b.ReportMetric(p95(lat), "p95_ms")
		})
	}
}

// BenchmarkQualify measures POST /leads/{id}/qualify creating a company,
// a contact and a deal through the in-memory fake contacts and deals
// servers on loopback (so the number is leads' own cost plus three local
// HTTP round trips, not the real services' work).
func BenchmarkQualify(b *testing.B) {
	e := newEnv(b)
	lat := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		id := e.createLead(map[string]any{"first_name": "Q", "last_name": strconv.Itoa(i), "company": "Co " + strconv.Itoa(i),
			"email": "q" + strconv.Itoa(i) + "@x.example"})
		t0 := time.Now()
		r := e.do("POST", path("/leads/{id}/qualify", id), e.user, map[string]any{
			"create_company": true, "create_deal": true, "deal_value": "100.00"})
		lat = append(lat, time.Since(t0))
		if r.status != http.StatusOK {
			b.Fatalf("qualify: %d %s", r.status, r.body)
		}
	}
	b.ReportMetric(p95(lat), "p95_ms")
}
