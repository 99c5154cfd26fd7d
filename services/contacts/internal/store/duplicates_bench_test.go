//go:build bench

package store

// Duplicate candidates among many contacts (docs/benchmarks.md,
// "Duplicates"):
//
//	CRM_BENCH_ROWS=100000 go test -tags bench -run '^$' -bench Duplicates -benchtime 1x -timeout 30m ./internal/store/
//
// It seeds CRM_BENCH_ROWS contacts (default 100,000) in companies of 20,
// one in 50 sharing an e-mail with another, one in 50 a phone number, one
// in 100 named like a colleague, and reports
//   - one contact's candidates (GET /contacts/{id}/duplicates' store
//     call) p50/p95 against the 50 ms target, and against PostgreSQL's own
//     run of the candidate query for the same contact;
//   - the first page of every pair (GET /contacts/duplicates) against
//     PostgreSQL's own run of the pair query for the same page: the
//     target is within 2×.

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/testdb"
)

func BenchmarkDuplicates(b *testing.B) {
	ctx := context.Background()
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("CRM_BENCH_ROWS")); err == nil && v > 0 {
		n = v
	}
	d := testdb.New(b, Schema, Migrate, MigrationSets...)
	s := &Store{db: d, log: slog.Default()}
	start := time.Now()
	for _, q := range []string{
		`ALTER TABLE contacts DISABLE TRIGGER USER`,
		fmt.Sprintf(`INSERT INTO companies (name) SELECT 'Company ' || g FROM generate_series(1, %d) g`, n/20+1),
		// Contact g: e-mail shared with g-1 when g %% 50 = 0, phone with
		// g-1 when g %% 50 = 25, last name like its predecessor's (same
		// company) when g %% 100 = 10.
		fmt.Sprintf(`INSERT INTO contacts (first_name, last_name, email, phone, phone_e164, company_id)
			SELECT substr(md5((CASE WHEN g %% 100 = 10 THEN g - 1 ELSE g END)::text), 1, 8),
				substr(md5('l' || (CASE WHEN g %% 100 = 10 THEN g - 1 ELSE g END)), 1, 10) || CASE WHEN g %% 100 = 10 THEN 'x' ELSE '' END,
				'person' || CASE WHEN g %% 50 = 0 THEN g - 1 ELSE g END || '@example.test',
				'+1 415 ' || lpad((CASE WHEN g %% 50 = 25 THEN g - 1 ELSE g END)::text, 7, '0'),
				'+1415' || lpad((CASE WHEN g %% 50 = 25 THEN g - 1 ELSE g END)::text, 7, '0'),
				(g - 1) / 20 + 1
			FROM generate_series(1, %d) g`, n),
		`ALTER TABLE contacts ENABLE TRIGGER USER`,
		`ANALYZE contacts`, `ANALYZE companies`,
	} {
		if _, err := d.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("seeded %d contacts in %s", n, time.Since(start).Round(time.Millisecond))

	if os.Getenv("CRM_BENCH_EXPLAIN") != "" {
		for _, q := range []struct {
			sql  string
			args []any
		}{{contactCandidatesSQL, []any{int64(n / 2)}}, {ContactDuplicatesPairsSQL, []any{int64(0), int64(0), 26}}} {
			rows, err := d.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) `+q.sql, q.args...)
			if err != nil {
				b.Fatal(err)
			}
			plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				b.Fatal(err)
			}
			fmt.Println(strings.Join(plan, "\n"))
		}
	}
	var ids []int64
	rows, err := d.Query(ctx, `SELECT id FROM contacts ORDER BY random() LIMIT 300`)
	if err != nil {
		b.Fatal(err)
	}
	if ids, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		b.Fatal(err)
	}
	raw := func(sql string, args ...any) time.Duration {
		t0 := time.Now()
		rows, err := d.Query(ctx, sql, args...)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
		}
		if rows.Err() != nil {
			b.Fatal(rows.Err())
		}
		return time.Since(t0)
	}
	pct := func(ds []time.Duration, p float64) time.Duration {
		slices.Sort(ds)
		return ds[int(float64(len(ds)-1)*p)]
	}
	for range b.N {
		var one, oneRaw []time.Duration
		found := 0
		for _, id := range ids {
			oneRaw = append(oneRaw, raw(contactCandidatesSQL, id))
			t0 := time.Now()
			list, err := s.ContactDuplicates(ctx, id, 50)
			if err != nil {
				b.Fatal(err)
			}
			one = append(one, time.Since(t0))
			found += len(list)
		}
		var page, pageRaw []time.Duration
		pairs := 0
		for range 50 {
			after := [2]int64{rand.Int64N(int64(n) / 2), 0}
			pageRaw = append(pageRaw, raw(ContactDuplicatesPairsSQL, after[0], after[1], 26))
			t0 := time.Now()
			list, err := s.ListContactDuplicates(ctx, after, 26)
			if err != nil {
				b.Fatal(err)
			}
			page = append(page, time.Since(t0))
			pairs = len(list)
		}
		var first, firstRaw []time.Duration
		for range 30 {
			firstRaw = append(firstRaw, raw(ContactDuplicatesPairsSQL, int64(0), int64(0), 26))
			t0 := time.Now()
			if _, err := s.ListContactDuplicates(ctx, [2]int64{}, 26); err != nil {
				b.Fatal(err)
			}
			first = append(first, time.Since(t0))
		}
		ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
		ratio := func(x, y time.Duration) string { return fmt.Sprintf("%.2f×", float64(x)/float64(y)) }
		fmt.Printf("\nDuplicates among %d contacts (%d candidates for %d contacts, pages of %d pairs)\n", n, found, len(ids), pairs)
		fmt.Printf("| | p50 | p95 | PostgreSQL p50 | PostgreSQL p95 | ratio p50 |\n|---|---|---|---|---|---|\n")
		fmt.Printf("| one contact's candidates | %s | %s | %s | %s | %s |\n", ms(pct(one, .5)), ms(pct(one, .95)),
			ms(pct(oneRaw, .5)), ms(pct(oneRaw, .95)), ratio(pct(one, .5), pct(oneRaw, .5)))
		fmt.Printf("| first page of pairs | %s | %s | %s | %s | %s |\n", ms(pct(first, .5)), ms(pct(first, .95)),
			ms(pct(firstRaw, .5)), ms(pct(firstRaw, .95)), ratio(pct(first, .5), pct(firstRaw, .5)))
		fmt.Printf("| a page of pairs at a random cursor | %s | %s | %s | %s | %s |\n", ms(pct(page, .5)), ms(pct(page, .95)),
			ms(pct(pageRaw, .5)), ms(pct(pageRaw, .95)), ratio(pct(page, .5), pct(pageRaw, .5)))
		b.ReportMetric(float64(pct(one, .95).Microseconds())/1000, "one-p95-ms")
		b.ReportMetric(float64(pct(first, .5))/float64(pct(firstRaw, .5)), "page-ratio")
	}
}
