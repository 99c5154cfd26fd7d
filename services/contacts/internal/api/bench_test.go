//go:build bench

package api_test

// Big-data benchmarks, behind the "bench" build tag so `make test` never
// builds the million-row fixture. See docs/benchmarks.md:
//
//	CRM_BENCH_ROWS=1000000 go test -tags bench -run '^$' -bench . -benchtime 1x -timeout 60m ./internal/api/

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/proccpu"
	"github.com/opencrm/crm/services/contacts/internal/api"
)

func benchRows() int {
	if n, err := strconv.Atoi(os.Getenv("CRM_BENCH_ROWS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// seed fills contacts with n generated rows (1,000 companies, 50 users,
// 2,000 surnames) at INSERT ... SELECT speed, then analyses.
func seed(b *testing.B, e *env, n int) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	for _, q := range []string{
		`INSERT INTO companies (name, domain) SELECT 'Company ' || g, 'c' || g || '.test' FROM generate_series(1, 1000) g`,
		`INSERT INTO directory_users (id, name, email, role, team_id, active, updated_at)
			SELECT g, 'User ' || g, 'u' || g || '@crm.test', 'user', g % 5, true, now() FROM generate_series(5, 50) g
			ON CONFLICT DO NOTHING`,
		fmt.Sprintf(`INSERT INTO contacts (first_name, last_name, email, phone, mobile, company_id, status, source,
				assigned_to, created_at, updated_at)
			SELECT (ARRAY['Ada','Alan','Grace','Linus','Barbara','Ken','Dennis','Margaret','Edsger','Donald'])[1 + g %% 10],
				'Surname' || (g %% 2000), 'person' || g || '@example' || (g %% 97) || '.test',
				'+1 555 ' || lpad((g %% 10000000)::text, 7, '0'), CASE WHEN g %% 3 = 0 THEN '+44 77 ' || g END,
				CASE WHEN g %% 4 <> 0 THEN 1 + g %% 1000 END,
				CASE WHEN g %% 5 = 0 THEN 'inactive' ELSE 'active' END,
				(ARRAY['web','referral','event','ads'])[1 + g %% 4],
				1 + g %% 50, timestamptz '2024-01-01' + (g || ' minutes')::interval, now()
			FROM generate_series(1, %d) g`, n),
		`VACUUM ANALYZE contacts`,
		`VACUUM ANALYZE companies`,
	} {
		if _, err := e.db.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("seeded %d contacts in %s", n, time.Since(start).Round(time.Millisecond))
}

func pct(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)]
}

func BenchmarkContacts(b *testing.B) {
	e := newEnv(b)
	n := benchRows()
	seed(b, e, n)
	ctx := context.Background()
	st := e.store

	queries := []string{
		"", "search=surname1234", "search=person4242", "search=555%200001", "search=company%2077",
		"status=inactive", "company_id=78", "assigned_to=7", "source=event",
		"date_from=2024-02-01&date_to=2024-02-07", "scope=me", "scope=team", "scope=company",
		"search=surname12&status=active&sort_by=created_at&sort_dir=desc",
		"company_id=78&sort_by=email", "page=400&per_page=100",
	}
	for _, k := range []string{"name", "email", "phone", "company_name", "status", "created_at"} {
		for _, d := range []string{"asc", "desc"} {
			queries = append(queries, "sort_by="+k+"&sort_dir="+d, "status=inactive&sort_by="+k+"&sort_dir="+d)
		}
	}
	b.Run("list", func(b *testing.B) {
		const reps = 20
		worst, missed := time.Duration(0), 0
		var table strings.Builder
		fmt.Fprintf(&table, "%d contacts, %d runs per query after 1 warm-up; load average at start: %s\n", n, reps, proccpu.LoadAvg())
		fmt.Fprintf(&table, "%-3s %-66s %9s %9s %9s %9s %8s %s\n", "#", "query", "http p50", "http p95", "sql p50", "sql p95", "total", "p95<50ms")
		for qi, q := range queries {
			var httpT, sqlT []time.Duration
			total := 0.0
			for i := 0; i <= reps; i++ {
				req := httptest.NewRequest("GET", "/contacts?"+q, nil)
				req.Header.Set("Authorization", "Bearer "+e.user)
				rec := httptest.NewRecorder()
				start := time.Now()
				e.h.ServeHTTP(rec, req)
				took := time.Since(start)
				if rec.Code != 200 {
					b.Fatalf("%s: %d %s", q, rec.Code, rec.Body)
				}
				var page struct{ Total float64 }
				if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
					b.Fatal(err)
				}
				total = page.Total
				f, err := api.ParseContactFilter(req.URL.Query(), nil)
				if err != nil {
					b.Fatal(err)
				}
				f.Caller, f.CallerTeam = userID, &e.teamTen
				start = time.Now()
				if _, _, err := st.ListContacts(ctx, f); err != nil {
					b.Fatal(err)
				}
				if i > 0 {
					httpT, sqlT = append(httpT, took), append(sqlT, time.Since(start))
				}
			}
			p95 := pct(httpT, 0.95)
			worst = max(worst, p95)
			met := "yes"
			if p95 >= 50*time.Millisecond {
				met, missed = "NO", missed+1
			}
			fmt.Fprintf(&table, "%-3d %-66s %9.2f %9.2f %9.2f %9.2f %8.0f %s\n", qi+1, "/contacts?"+q,
				ms(pct(httpT, 0.5)), ms(p95), ms(pct(sqlT, 0.5)), ms(pct(sqlT, 0.95)), total, met)
		}
		fmt.Fprintf(&table, "worst http p95 %.2f ms; %d of %d queries miss p95 < 50 ms; load average at end: %s\n",
			ms(worst), missed, len(queries), proccpu.LoadAvg())
		report(b, "list", table.String())
		b.ReportMetric(ms(worst), "worst-p95-ms")
	})

	b.Run("export", func(b *testing.B) {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		w := &countingWriter{header: http.Header{}}
		req := httptest.NewRequest("GET", "/contacts/export", nil)
		req.Header.Set("Authorization", "Bearer "+e.admin)
		stop := make(chan struct{})
		peak := uint64(0)
		go func() {
			var m runtime.MemStats
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
					runtime.ReadMemStats(&m)
					peak = max(peak, m.HeapInuse)
				}
			}
		}()
		start := time.Now()
		e.h.ServeHTTP(w, req)
		took := time.Since(start)
		close(stop)
		runtime.ReadMemStats(&after)
		conn, err := e.db.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		var sink countingWriter
		if _, err := conn.Conn().PgConn().CopyTo(ctx, &sink, `COPY (SELECT id, first_name, last_name, email, phone, mobile,
			job_title, company_name, address_street, address_city, address_state, address_zip, address_country, notes,
			tags, status, source, created_at, updated_at FROM contacts ORDER BY sort_name, id) TO STDOUT WITH CSV HEADER`); err != nil {
			b.Fatal(err)
		}
		conn.Release()
		report(b, "export", fmt.Sprintf("export %d rows, %d MB over HTTP in %s; heap in use before %d MB, peak %d MB (growth %d MB, target < 64 MB); raw COPY TO %s (%d MB); load average %s",
			w.lines-1, w.n>>20, took.Round(time.Millisecond), before.HeapInuse>>20, peak>>20,
			(int64(peak)-int64(before.HeapInuse))>>20, time.Since(start).Round(time.Millisecond), sink.n>>20, proccpu.LoadAvg()))
		b.ReportMetric(float64(int64(peak)-int64(before.HeapInuse))/(1<<20), "heap-growth-MB")
	})
}

// report logs a result table once and appends it to CRM_BENCH_OUT (default
// contacts-bench.txt in the OS temp directory), so no line is lost to log
// truncation.
func report(b *testing.B, name, text string) {
	b.Helper()
	b.Log("\n" + text)
	path := os.Getenv("CRM_BENCH_OUT")
	if path == "" {
		path = filepath.Join(os.TempDir(), "contacts-bench.txt")
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "== %s %s\n%s\n", name, time.Now().UTC().Format(time.RFC3339), text); err != nil {
		b.Fatal(err)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

type countingWriter struct {
	header http.Header
	n      int
	lines  int
}

func (c *countingWriter) Header() http.Header { return c.header }
func (c *countingWriter) WriteHeader(int)     {}
func (c *countingWriter) Flush()              {}
func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += len(p)
	c.lines += bytes.Count(p, []byte("\n"))
	return len(p), nil
}
