package api_test

import (
	"context"
	"net/http"
	"testing"
)

// seedDeals inserts n deals directly (half with a company name, spread
// over stages and assignees) so list benchmarks run against a real table.
func seedDeals(b *testing.B, e *env, n int) {
	b.Helper()
	_, err := e.db.Exec(context.Background(), `INSERT INTO deals (title, value, currency, stage_id, status, company_id, company_name, assigned_to)
		SELECT 'Deal ' || g, (g % 100000)::numeric / 100, 'USD', 1 + g % 4, 'open',
			CASE WHEN g % 2 = 0 THEN 100 END, CASE WHEN g % 2 = 0 THEN 'Acme ' || (g % 500) END, 1 + g % 3
		FROM generate_series(1, $1::int) g`, n)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.db.Exec(context.Background(), `ANALYZE deals`); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkListDeals measures GET /deals (handler, auth, SQL, JSON) on
// 100,000 deals.
func BenchmarkListDeals(b *testing.B) {
	e := newEnv(b)
	seedDeals(b, e, 100_000)
	for _, q := range []string{
		"",
		"?sort_by=value&sort_dir=desc&per_page=100",
		"?search=acme%2042",
		"?scope=team&status=open&sort_by=title",
	} {
		b.Run("q="+q, func(b *testing.B) {
			for b.Loop() {
				if r := e.do("GET", "/deals"+q, e.user, nil); r.Status != http.StatusOK {
					b.Fatalf("%d %s", r.Status, r.Body)
				}
			}
		})
	}
}

// BenchmarkCreateQuote measures POST /deals/{id}/quotes with 5 lines,
// serial and parallel (all on one deal: the worst case for the number
// counter row and the deal lock).
func BenchmarkCreateQuote(b *testing.B) {
	e := newEnv(b)
	d := e.createDeal(map[string]any{"title": "Bench"})
	body := map[string]any{"tax_rate": 19, "line_items": items(
		[3]any{"a", 1, "10.00"}, [3]any{"b", 2, "19.99"}, [3]any{"c", "1.5", "100"}, [3]any{"d", 3, "0.99"}, [3]any{"e", 10, "5"})}
	url := path("/deals/%d/quotes", d.ID)
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			if r := e.do("POST", url, e.user, body); r.Status != http.StatusCreated {
				b.Fatalf("%d %s", r.Status, r.Body)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if r := e.do("POST", url, e.user, body); r.Status != http.StatusCreated {
					b.Errorf("%d %s", r.Status, r.Body)
					return
				}
			}
		})
	})
}
