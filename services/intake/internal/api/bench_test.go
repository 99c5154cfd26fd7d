//go:build bench

package api_test

// The intake throughput benchmark (docs/benchmarks.md). It is behind
// the "bench" build tag so `make test` never runs it:
//
//	cd services/intake && go test -tags bench -run TestBenchIntake -v -timeout 10m ./internal/api/
//
// It measures, in one run on one machine: pgbench single-row INSERTs into a
// table shaped like intake.submissions at 16 clients, then sustained
// POST /public/leads at 16 concurrent HTTP clients against the real intake
// handler stack (PostgreSQL, Redis, API key cache) with a fast fake leads
// service, and fails unless intake reaches 0.25 × pgbench with p99 < 100 ms
// and no errors.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/intake/migrations"
)

const (
	benchClients = 16
)

func benchDuration() time.Duration {
	if s := os.Getenv("INTAKE_BENCH_SECONDS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return time.Duration(n) * time.Second
		}
	}
	return 30 * time.Second
}

func pgbenchPath() string {
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p
	}
	return "/usr/lib/postgresql/15/bin/pgbench"
}

// pgbenchTPS runs single-row INSERTs into a copy of the submissions table.
func pgbenchTPS(t *testing.T, d time.Duration) float64 {
	t.Helper()
	ctx := context.Background()
	pool, url, drop, err := testdb.Create(ctx, "intake", migrate, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	defer drop()
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE bench_submissions (LIKE submissions INCLUDING ALL)`); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "insert.sql")
	sql := `INSERT INTO intake.bench_submissions (api_key_id, status, first_name, last_name, email, phone, company,
  job_title, source, notes, origin, attempts, next_attempt_at)
VALUES (1, 'pending', 'Ada', 'Lovelace', 'ada@example.com', '', 'Analytical', '', 'public-api', 'call me', '', 1,
  now() + interval '30 seconds');
`
	if err := os.WriteFile(script, []byte(sql), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(pgbenchPath(), "-n", "-M", "prepared", "-c", strconv.Itoa(benchClients), "-j", "2",
		"-T", strconv.Itoa(int(d.Seconds())), "-f", script, url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("pgbench output without tps:\n%s", out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	return tps
}

type loadResult struct {
	rps      float64
	p50, p99 time.Duration
	max      time.Duration
	ok, errs int64
	lat      []time.Duration
}

// intakeLoad posts valid submissions from benchClients goroutines for d.
func intakeLoad(t *testing.T, e *env, key string, d time.Duration, idem bool) loadResult {
	t.Helper()
	tr := &http.Transport{MaxIdleConns: benchClients * 2, MaxIdleConnsPerHost: benchClients * 2}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	defer tr.CloseIdleConnections()
	var ok, errs atomic.Int64
	var seq atomic.Int64
	lat := make([][]time.Duration, benchClients)
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for c := range benchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				n := seq.Add(1)
				body := fmt.Sprintf(`{"first_name":"Ada","last_name":"Lovelace","email":"ada%d@example.com","company":"Analytical","notes":"call me"}`, n)
				req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/public/leads", bytes.NewReader([]byte(body)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-API-Key", key)
				if idem {
					req.Header.Set("Idempotency-Key", "bench-"+strconv.FormatInt(n, 10))
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					errs.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat[c] = append(lat[c], time.Since(t0))
				if resp.StatusCode != http.StatusCreated {
					errs.Add(1)
					continue
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	res := loadResult{rps: float64(ok.Load()) / elapsed.Seconds(), ok: ok.Load(), errs: errs.Load(), lat: all}
	res.p50, res.p99, res.max = quantiles(slices.Clone(all))
	return res
}

// TestBenchIntake alternates pgbench and intake rounds, so load from
// other processes on the machine drifts over both alike, and compares the
// totals.
func TestBenchIntake(t *testing.T) {
	d := benchDuration()
	const rounds = 3
	round := d / rounds
	e := newEnv(t)
	key := e.newKey(1, 100_000_000)
	// Warm up: key cache, connection pools, prepared statements.
	_ = intakeLoad(t, e, key, 2*time.Second, false)

	var pgTx, plainOK, idemOK float64
	var plain, idem loadResult
	var plainLat, idemLat []time.Duration
	for r := range rounds {
		tps := pgbenchTPS(t, round)
		pgTx += tps * round.Seconds()
		p := intakeLoad(t, e, key, round, false)
		i := intakeLoad(t, e, key, round, true)
		t.Logf("round %d: pgbench %.0f tps, intake %.0f req/s (p99 %v), with Idempotency-Key %.0f req/s (p99 %v)",
			r+1, tps, p.rps, p.p99, i.rps, i.p99)
		plainOK += float64(p.ok)
		idemOK += float64(i.ok)
		plain.errs += p.errs
		idem.errs += i.errs
		plainLat = append(plainLat, p.lat...)
		idemLat = append(idemLat, i.lat...)
	}
	secs := round.Seconds() * rounds
	pg := pgTx / secs
	plain.rps, idem.rps = plainOK/secs, idemOK/secs
	plain.p50, plain.p99, plain.max = quantiles(plainLat)
	idem.p50, idem.p99, idem.max = quantiles(idemLat)

	ratio := plain.rps / pg
	t.Logf("pgbench single-row INSERT, %d clients: %.0f tps", benchClients, pg)
	t.Logf("intake POST /public/leads, %d clients: %.0f req/s, p50 %v, p99 %v, max %v, ok %.0f, errors %d, ratio %.2f",
		benchClients, plain.rps, plain.p50, plain.p99, plain.max, plainOK, plain.errs, ratio)
	t.Logf("intake with Idempotency-Key, %d clients: %.0f req/s, p50 %v, p99 %v, max %v, ok %.0f, errors %d, ratio %.2f",
		benchClients, idem.rps, idem.p50, idem.p99, idem.max, idemOK, idem.errs, idem.rps/pg)
	if plain.errs != 0 || idem.errs != 0 {
		t.Errorf("errors: %d plain, %d with Idempotency-Key; want 0", plain.errs, idem.errs)
	}
	if ratio < 0.25 {
		t.Errorf("intake/pgbench = %.2f, want ≥ 0.25", ratio)
	}
	if plain.p99 >= 100*time.Millisecond {
		t.Errorf("p99 = %v, want < 100ms", plain.p99)
	}
}

func quantiles(all []time.Duration) (p50, p99, max time.Duration) {
	if len(all) == 0 {
		return 0, 0, 0
	}
	slices.Sort(all)
	q := func(p float64) time.Duration { return all[min(len(all)-1, int(p*float64(len(all))))] }
	return q(0.50), q(0.99), all[len(all)-1]
}
