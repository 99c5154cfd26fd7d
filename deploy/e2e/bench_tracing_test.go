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
// provider, no hook installed), on (every span of every request exported
// over OTLP/HTTP to a local receiver that discards it) and on at the
// production sampler (OTEL_TRACES_SAMPLER=parentbased_traceidratio, 10 % of
// the traces recorded whole, the rest instrumented but not recorded), on
// the same stack, database and machine, each mode in each position of the
// rounds once. The target: on within 5 % of off.
func BenchmarkTracingOverhead(b *testing.B) {
	const clients = 8
	dur := 5 * time.Second
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
	off := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "", "OTEL_BSP_SCHEDULE_DELAY": "",
		"OTEL_TRACES_SAMPLER": "", "OTEL_TRACES_SAMPLER_ARG": ""}
	envs := map[string]map[string]string{"off": off, "on": tracingEnv(), "on, 10 %": tracingEnv()}
	envs["on"]["OTEL_TRACES_SAMPLER"], envs["on"]["OTEL_TRACES_SAMPLER_ARG"] = "", ""
	envs["on, 10 %"]["OTEL_TRACES_SAMPLER"], envs["on, 10 %"]["OTEL_TRACES_SAMPLER_ARG"] = "parentbased_traceidratio", "0.1"
	b.Cleanup(func() { _ = stack.SetEnv(ctx, off) })
	b.ResetTimer()

	// Each mode comes first, second and third twice, so a drift of the
	// machine's load weighs on all alike; six rounds average out a shared
	// machine's swings between rounds (up to ±20 % here).
	latin := [][]string{{"off", "on", "on, 10 %"}, {"on", "on, 10 %", "off"}, {"on, 10 %", "off", "on"}}
	orders := append(latin, latin...)
	sums := map[string][2]float64{}
	var rows [][]string
	for round, modes := range orders {
		for _, mode := range modes {
			if err := stack.SetEnv(ctx, envs[mode]); err != nil {
				b.Fatal(err)
			}
			// The restarted services log in again: a fresh token.
			adm = benchAdmin(b)
			lps, lerr := listRound(b, adm, clients, dur)
			pps, _, perr := intakeRound(b, secrets, dur, submission(1000+round*10+len(mode)), 201)
			s := sums[mode]
			sums[mode] = [2]float64{s[0] + lps, s[1] + pps}
			rows = append(rows, []string{fmt.Sprint(round + 1), mode, fmt.Sprintf("%.0f", lps), fmt.Sprintf("%.0f", pps),
				fmt.Sprint(lerr + perr)})
		}
	}
	b.StopTimer()
	for _, mode := range []string{"on", "on, 10 %"} {
		l, p := sums[mode][0]/sums["off"][0], sums[mode][1]/sums["off"][1]
		rows = append(rows, []string{"all", mode + " / off", fmt.Sprintf("%.3f", l), fmt.Sprintf("%.3f", p),
			yes(l >= 0.95 && p >= 0.95) + " (target ≥ 0.95)"})
	}
	report(b, fmt.Sprintf("Tracing overhead: %d closed-loop clients, %s per measurement", clients, dur),
		[]string{"round", "tracing", "GET /contacts?per_page=25 req/s", "POST /public/leads req/s", "errors"}, rows)
}

// listRound runs clients closed loops of GET /contacts?per_page=25 for dur
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
				r, err := adm.Do("GET", "/contacts?per_page=25", nil)
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
