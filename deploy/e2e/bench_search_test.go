package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// searchCase is one broad search through the gateway and the term of its
// floor.
type searchCase struct{ query, term string }

// BenchmarkBroadSearch: broad substring searches (a term matching 1/8 of
// 1,000,000 rows) through the gateway against their floor, measured in the
// same run: an exact count(*) of the same term over a minimal (id, text)
// table holding the same search text behind the same trigram index (JIT
// off). Each side: 40 requests after a warm-up, one of each in turn, p95;
// target gateway ≤ 1.5 × floor. Every total stays exact.
func BenchmarkBroadSearch(b *testing.B) {
	n := benchRows()
	c := superuser(b)
	b.Run("contacts", func(b *testing.B) {
		seedContacts(b, c, n)
		benchBroadSearch(b, c, n, "contacts", "/contacts", `SELECT id, search_text FROM contacts.contacts`, []searchCase{
			{"search=smith", "smith"},
			{"search=nguyen&sort_by=email", "nguyen"},
		})
	})
	b.Run("leads", func(b *testing.B) {
		seedLeads(b, c, n)
		benchBroadSearch(b, c, n, "leads", "/leads", `SELECT id, search_text FROM leads.leads`, []searchCase{
			{"search=smith", "smith"},
			{"search=nguyen&sort_by=email", "nguyen"},
		})
	})
}

// benchBroadSearch measures cases through the gateway's list at path
// against the floor built from floorRows (id, text).
func benchBroadSearch(b *testing.B, c *pgx.Conn, n int, object, path, floorRows string, cases []searchCase) {
	adm := benchAdmin(b)
	exec1(b, c, `DROP TABLE IF EXISTS public.bench_floor`)
	exec1(b, c, `CREATE TABLE public.bench_floor AS `+floorRows)
	exec1(b, c, `CREATE INDEX ON public.bench_floor USING gin (search_text gin_trgm_ops)`)
	exec1(b, c, `VACUUM ANALYZE public.bench_floor`)
	defer exec1(b, c, `DROP TABLE public.bench_floor`)
	exec1(b, c, `SET jit = off`)
	defer exec1(b, c, `RESET jit`)
	var rows [][]string
	missed := 0
	b.ResetTimer()
	for _, sc := range cases {
		var total float64
		get := func() error {
			r, err := adm.Do("GET", path+"?"+sc.query, nil)
			if err == nil && r.Status != 200 {
				err = fmt.Errorf("%s: %s", sc.query, r)
			}
			if err == nil {
				total, _ = r.JSON["total"].(float64)
			}
			return err
		}
		var want int
		floor := func() error {
			return c.QueryRow(context.Background(), `SELECT count(*) FROM public.bench_floor WHERE search_text LIKE $1`,
				"%"+sc.term+"%").Scan(&want)
		}
		// Warm both paths once, then measure them alternately, one request
		// of each in turn, so both see the same machine (it is shared).
		if err := get(); err != nil {
			b.Fatal(err)
		}
		if err := floor(); err != nil {
			b.Fatal(err)
		}
		var gws, fls []time.Duration
		for i := 0; i < 40; i++ {
			gws = append(gws, latencies(b, 1, get)...)
			fls = append(fls, latencies(b, 1, floor)...)
		}
		gw, fl := pct(gws, 0.95), pct(fls, 0.95)
		if int(total) != want {
			b.Fatalf("%s %s: total %.0f, floor count %d", object, sc.query, total, want)
		}
		ratio := float64(gw) / float64(fl)
		verdict := "yes"
		if ratio > 1.5 {
			verdict = "no"
			missed++
		}
		rows = append(rows, []string{"`" + sc.query + "`", fmt.Sprintf("%.0f", total), ms(gw), ms(fl), fmt.Sprintf("%.2f", ratio), verdict})
	}
	b.StopTimer()
	report(b, fmt.Sprintf("Broad %s searches through the gateway (%d rows, 40 requests per case)", object, n),
		[]string{"query", "total", "gateway p95 ms", "floor p95 ms", "ratio", "≤ 1.5"}, rows)
	note(fmt.Sprintf("Floor: `SELECT count(*) FROM bench_floor WHERE search_text LIKE '%%<term>%%'` over `CREATE TABLE bench_floor AS %s` with a gin_trgm_ops index, VACUUM ANALYZE, JIT off. %d of %d cases missed.",
		strings.Join(strings.Fields(floorRows), " "), missed, len(cases)))
	b.ReportMetric(float64(missed), "missed")
}
