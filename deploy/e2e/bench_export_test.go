package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// seedLeads fills leads with n rows once per process: 50 owners, four
// sources and statuses a quarter each, creation days over two years.
func seedLeads(b *testing.B, c *pgx.Conn, n int) {
	seedOnce(b, "leads", func() {
		exec1(b, c, `SET search_path = leads, public`)
		exec1(b, c, `INSERT INTO leads.directory_users (id, name, email, role, active, updated_at)
			SELECT 1000 + g, 'Rep ' || chr(65 + g % 26) || g, 'rep' || g || '@crm.example', 'user', true, now()
			FROM generate_series(1, 50) g ON CONFLICT DO NOTHING`)
		exec1(b, c, fmt.Sprintf(`INSERT INTO leads.leads (first_name, last_name, email, phone, company, source, status,
				assigned_to, assigned_to_name, created_at)
			SELECT (ARRAY['Ann','Bob','Cid','Dora','Eve','Finn','Gus','Hana','Ivan','Jade'])[1 + g %% 10] || g,
				(ARRAY['Smith','Jones','Nguyen','Garcia','Müller','Rossi','Kowalski','Tanaka'])[1 + g %% 8],
				'lead' || g || '@corp' || (g %% 100) || '.example',
				'+1 555 ' || lpad((g %% 10000000)::text, 7, '0'),
				'Company ' || (g %% 20000) || ' Ltd',
				(ARRAY['web','referral','event','partner'])[1 + g %% 4],
				(ARRAY['new','contacted','qualified','disqualified'])[1 + g %% 4],
				1001 + g %% 50, 'Rep ' || chr(65 + (1 + g %% 50) %% 26) || (1 + g %% 50),
				now() - (g %% 730) * interval '1 day'
			FROM generate_series(1, %d) g`, n))
		exec1(b, c, `RESET search_path`)
		exec1(b, c, `VACUUM (ANALYZE) leads.leads`)
		exec1(b, c, `VACUUM (ANALYZE) leads.lead_search`)
	})
}

// BenchmarkExport: the contact and lead CSV exports of the whole table
// through the gateway against a raw COPY (SELECT <the same columns> FROM
// <table> <the same order>) TO STDOUT WITH CSV HEADER of the same rows,
// measured in the same run; target ≤ 1.5 × raw. Each side runs
// exportRounds times, alternating, so load on the shared machine falls on
// both; the target is judged on the ratio of the totals (the ratio per
// round and of the best rounds are shown too). The service's and
// the gateway's resident memory is sampled during the exports: it must
// stay flat (growth < 64 MB).
func BenchmarkExport(b *testing.B) {
	n := benchRows()
	c := superuser(b)
	b.Run("contacts", func(b *testing.B) {
		seedContacts(b, c, n)
		benchExport(b, c, n, "contacts", "/contacts/export", `COPY (SELECT id, first_name, last_name, email, phone, mobile,
			job_title, company_name, address_street, address_city, address_state, address_zip, address_country, notes,
			tags, status, source, created_at, updated_at FROM contacts.contacts ORDER BY sort_name, id) TO STDOUT WITH CSV HEADER`)
	})
	b.Run("leads", func(b *testing.B) {
		seedLeads(b, c, n)
		benchExport(b, c, n, "leads", "/leads/export", `COPY (SELECT id, first_name, last_name, email, phone, company,
			job_title, source, status, notes, tags, created_at, updated_at FROM leads.leads
			ORDER BY lower(first_name || ' ' || last_name), id) TO STDOUT WITH CSV HEADER`)
	})
}

const exportRounds = 3

func benchExport(b *testing.B, c *pgx.Conn, n int, service, path, raw string) {
	adm := benchAdmin(b)
	pids := map[string]int{service: stack.Pid(service), "gateway": stack.Pid("gateway")}
	var gw, pg []time.Duration
	var size, rawSize int64
	growth := map[string]int64{}
	b.ResetTimer()
	for range exportRounds {
		stop := sampleRSS(pids, growth)
		req, err := http.NewRequest("GET", adm.Base+path, nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+adm.Token)
		start := time.Now()
		resp, err := adm.HTTP.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var body lineCounter
		_, err = io.Copy(&body, resp.Body)
		_ = resp.Body.Close()
		took := time.Since(start)
		stop()
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("%s: %d %v", path, resp.StatusCode, err)
		}
		if body.lines != int64(n)+1 {
			b.Fatalf("%s: %d lines for %d rows", path, body.lines, n)
		}
		gw, size = append(gw, took), body.n

		start = time.Now()
		var sink countWriter
		if _, err := c.PgConn().CopyTo(context.Background(), &sink, raw); err != nil {
			b.Fatal(err)
		}
		pg, rawSize = append(pg, time.Since(start)), sink.n
	}
	b.StopTimer()
	total := func(ds []time.Duration) (t time.Duration) {
		for _, d := range ds {
			t += d
		}
		return t
	}
	secs := func(ds []time.Duration) string {
		s := make([]string, len(ds))
		for i, d := range ds {
			s[i] = fmt.Sprintf("%.2f", d.Seconds())
		}
		return strings.Join(s, " / ")
	}
	rounds := make([]string, len(gw))
	for i := range gw {
		rounds[i] = fmt.Sprintf("%.2f", gw[i].Seconds()/pg[i].Seconds())
	}
	ratio := total(gw).Seconds() / total(pg).Seconds()
	best := slices.Min(gw).Seconds() / slices.Min(pg).Seconds()
	report(b, fmt.Sprintf("%s CSV export through the gateway (%d rows, %d alternating rounds)", service, n, exportRounds),
		[]string{"path", "MB", "seconds (each round)", "ratio per round", "ratio of totals", "best / best", "≤ 1.5"}, [][]string{
			{"GET " + path, fmt.Sprint(size >> 20), secs(gw), strings.Join(rounds, " / "), fmt.Sprintf("%.2f", ratio), fmt.Sprintf("%.2f", best), yes(ratio <= 1.5)},
			{"raw COPY TO STDOUT (same columns, same order)", fmt.Sprint(rawSize >> 20), secs(pg), "1", "1", "1", ""},
		})
	note(fmt.Sprintf("Resident memory growth during the exports (target < 64 MB): %s %d MB (of %d MB at the start), gateway %d MB (of %d MB).",
		service, growth[service]>>20, rss(pids[service])>>20, growth["gateway"]>>20, rss(pids["gateway"])>>20))
	b.ReportMetric(ratio, "ratio")
}

// lineCounter counts bytes and lines.
type lineCounter struct{ n, lines int64 }

func (w *lineCounter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	w.lines += int64(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}

// sampleRSS samples each process's VmRSS every 50 ms until the returned
// stop is called, and raises growth[name] to its peak above the first
// sample.
func sampleRSS(pids map[string]int, growth map[string]int64) (stop func()) {
	base := map[string]int64{}
	for name, pid := range pids {
		base[name] = rss(pid)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			for name, pid := range pids {
				if d := rss(pid) - base[name]; d > 0 {
					mu.Lock()
					growth[name] = max(growth[name], d)
					mu.Unlock()
				}
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// rss is a process's resident set in bytes (0 when unreadable).
func rss(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
