package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkTracingOverhead: gateway throughput of the contact list and of
// POST /public/leads with tracing off (no exporter: OpenTelemetry's no-op
// provider, no hook installed) and on (every span exported over OTLP/HTTP
// to a local receiver that discards it), alternating on the same stack,
// database and machine. The target: on within 5 % of off.
func BenchmarkTracingOverhead(b *testing.B) {
	const clients, rounds = 8, 4
	dur := 6 * time.Second
	ctx := context.Background()
	adm := benchAdmin(b)
	for i := range 50 {
		if r, err := adm.Do("POST", "/contacts", map[string]any{"first_name": "Trace", "last_name": fmt.Sprintf("Bench %d", i),
			"email": fmt.Sprintf("trace-bench-%d-%d@bench.example", time.Now().UnixNano(), i)}); err != nil || r.Status != 201 {
			b.Fatalf("seed contact: %v %v", err, r)
		}
	}
	secrets := make([]string, clients)
	for i := range secrets {
		kr, err := adm.Do("POST", "/api-keys", map[string]any{"name": fmt.Sprintf("trace-bench-%d", i), "rate_limit_per_minute": 100000})
		if err != nil || kr.Status != 201 {
			b.Fatalf("api key: %v %v", err, kr)
		}
		secrets[i], _ = kr.Data()["key"].(string)
	}
	traces.discard.Store(true)
	b.Cleanup(func() { traces.discard.Store(false) })
	off := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "", "OTEL_BSP_SCHEDULE_DELAY": ""}
	b.Cleanup(func() { _ = stack.SetEnv(ctx, off) })
	b.ResetTimer()

	sums := map[string][2]float64{}
	var rows [][]string
	for round := 1; round <= rounds; round++ {
		// Alternate which goes first, so a drift of the machine's load
		// weighs on both alike.
		modes := []string{"off", "on"}
		if round%2 == 0 {
			modes = []string{"on", "off"}
		}
		for _, mode := range modes {
			env := off
			if mode == "on" {
				env = tracingEnv()
			}
			if err := stack.SetEnv(ctx, env); err != nil {
				b.Fatal(err)
			}
			// The restarted services log in again: a fresh token.
			adm = benchAdmin(b)
			lps, lerr := listRound(b, adm, clients, dur)
			pps, _, perr := intakeRound(b, secrets, dur, submission(1000+round*10+len(mode)), 201)
			s := sums[mode]
			sums[mode] = [2]float64{s[0] + lps, s[1] + pps}
			rows = append(rows, []string{fmt.Sprint(round), mode, fmt.Sprintf("%.0f", lps), fmt.Sprintf("%.0f", pps),
				fmt.Sprint(lerr + perr)})
		}
	}
	b.StopTimer()
	l, p := sums["on"][0]/sums["off"][0], sums["on"][1]/sums["off"][1]
	met := "yes"
	if l < 0.95 || p < 0.95 {
		met = "no"
	}
	rows = append(rows, []string{"all", "on / off", fmt.Sprintf("%.3f", l), fmt.Sprintf("%.3f", p), met + " (target ≥ 0.95)"})
	report(b, fmt.Sprintf("Tracing overhead: %d closed-loop clients, %s per measurement", clients, dur),
		[]string{"round", "tracing", "GET /contacts?limit=25 req/s", "POST /public/leads req/s", "errors"}, rows)
}

// listRound runs clients closed loops of GET /contacts?limit=25 for dur
// and returns the rate of 200 answers and the number of others.
func listRound(b *testing.B, adm *Client, clients int, dur time.Duration) (float64, int64) {
	b.Helper()
	var okN, errN atomic.Int64
	deadline := time.Now().Add(dur)
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				r, err := adm.Do("GET", "/contacts?limit=25", nil)
				if err != nil || r.Status != 200 {
					errN.Add(1)
					continue
				}
				okN.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(okN.Load()) / time.Since(start).Seconds(), errN.Load()
}
