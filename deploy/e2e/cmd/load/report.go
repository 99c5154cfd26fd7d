package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/opencrm/crm/deploy/e2e"
)

// processes are the ones whose memory is sampled.
var processes = append(append([]string{}, e2e.Services...), "gateway", "render")

// sample is one point of the time series.
type sample struct {
	at  time.Duration
	rss map[string]float64 // MiB per process
	p95 time.Duration      // over the calls finished since the last sample
	n   int
}

type result struct {
	mu      sync.Mutex
	calls   map[string][]time.Duration
	errs    map[string]int
	firstEr map[string]string
	window  []time.Duration
	samples []sample
	elapsed time.Duration
	warmup  time.Duration
	dropped int
}

// drive starts operations at c.rate for c.duration (open loop: an
// operation that finds every worker busy is counted as dropped, not
// delayed) and samples RSS and latency every c.sample.
func drive(ctx context.Context, s *e2e.Stack, m *mix, c config) *result {
	res := &result{calls: map[string][]time.Duration{}, errs: map[string]int{}, firstEr: map[string]string{}, warmup: c.warmup}
	rec := func(cl call) {
		res.mu.Lock()
		defer res.mu.Unlock()
		res.calls[cl.endpoint] = append(res.calls[cl.endpoint], cl.took)
		res.window = append(res.window, cl.took)
		if cl.err != nil {
			res.errs[cl.endpoint]++
			if res.firstEr[cl.endpoint] == "" {
				res.firstEr[cl.endpoint] = cl.err.Error()
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	start := time.Now()
	res.sample(s, 0)
	slots := make(chan struct{}, c.workers)
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / c.rate))
	defer tick.Stop()
	samp := time.NewTicker(c.sample)
	defer samp.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-samp.C:
			res.sample(s, time.Since(start))
		case <-tick.C:
			select {
			case slots <- struct{}{}:
				o := m.pick()
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-slots }()
					o.run(rec)
				}()
			default:
				res.mu.Lock()
				res.dropped++
				res.mu.Unlock()
			}
		}
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.sample(s, res.elapsed)
	return res
}

func (r *result) sample(s *e2e.Stack, at time.Duration) {
	sm := sample{at: at, rss: map[string]float64{}}
	for _, p := range processes {
		if pid := s.Pid(p); pid > 0 {
			sm.rss[p] = float64(groupRSS(pid)) / 1024
		}
	}
	r.mu.Lock()
	sm.p95, sm.n = percentile(r.window, 0.95), len(r.window)
	r.window = r.window[:0]
	r.samples = append(r.samples, sm)
	r.mu.Unlock()
}

// groupRSS sums VmRSS over the process group led by pid: each binary is
// started in its own group, so the render worker's Chromium processes
// count towards it.
func groupRSS(pid int) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	total := 0
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n))
		if err != nil {
			continue
		}
		// Fields after the command name (which may hold spaces): state ppid pgrp.
		i := strings.LastIndexByte(string(stat), ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[2] != strconv.Itoa(pid) {
			continue
		}
		if kb, err := vmRSS(n); err == nil {
			total += kb
		}
	}
	return total
}

// vmRSS reads a process's resident set size in KiB from /proc.
func vmRSS(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
		}
	}
	return 0, errors.New("no VmRSS")
}

func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*q))]
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) }

// level is the median RSS of a process over the samples in (from, to]:
// a steady level, not one sample's spike (a burst of logins, each hashing
// a password with its own memory, lifts identity for a few seconds).
func (r *result) level(p string, from, to time.Duration) float64 {
	var vs []float64
	for _, s := range r.samples {
		if s.at > from && s.at <= to {
			vs = append(vs, s.rss[p])
		}
	}
	if len(vs) == 0 {
		return 0
	}
	slices.Sort(vs)
	return vs[len(vs)/2]
}

// memory is one process's RSS figures: the level over the last minute of
// the warm-up, the level over the last minute of the run, and the peak
// after the warm-up.
type memory struct{ base, final, peak float64 }

func (m memory) growth() float64 {
	if m.base <= 0 {
		return 0
	}
	return m.final/m.base - 1
}

func (r *result) memory(p string, warmup time.Duration) memory {
	m := memory{base: r.level(p, warmup-time.Minute, warmup), final: r.level(p, r.elapsed-time.Minute, r.elapsed)}
	for _, s := range r.samples {
		if s.at > warmup {
			m.peak = max(m.peak, s.rss[p])
		}
	}
	return m
}

func (r *result) markdown(c config) string {
	var b strings.Builder
	total, errs := 0, 0
	names := make([]string, 0, len(r.calls))
	for n := range r.calls {
		names = append(names, n)
	}
	slices.Sort(names)
	secs := r.elapsed.Seconds()
	fmt.Fprintf(&b, "Rate %.0f operations/s for %s (warm-up %s), %d workers; %d operations dropped (all workers busy).\n\n", c.rate, c.duration, c.warmup, c.workers, r.dropped)
	b.WriteString("| endpoint | calls | req/s | p50 ms | p95 ms | p99 ms | errors |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range names {
		d := r.calls[n]
		total += len(d)
		errs += r.errs[n]
		fmt.Fprintf(&b, "| %s | %d | %.2f | %s | %s | %s | %d |\n", n, len(d), float64(len(d))/secs,
			ms(percentile(d, .5)), ms(percentile(d, .95)), ms(percentile(d, .99)), r.errs[n])
	}
	fmt.Fprintf(&b, "| **all** | %d | %.2f | | | | %d |\n\n", total, float64(total)/secs, errs)
	for _, n := range names {
		if r.firstEr[n] != "" {
			fmt.Fprintf(&b, "- first error of %s: %s\n", n, r.firstEr[n])
		}
	}
	b.WriteString("\n| process | RSS, last minute of warm-up (median) MiB | RSS, last minute of run (median) MiB | growth | peak after warm-up MiB |\n|---|---:|---:|---:|---:|\n")
	for _, p := range processes {
		m := r.memory(p, c.warmup)
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %+.1f %% | %.1f |\n", p, m.base, m.final, m.growth()*100, m.peak)
	}
	return b.String()
}

// verdict is the soak criterion: no error, no process growing over 10 %.
func (r *result) verdict() error {
	var errs []string
	for n, e := range r.errs {
		if e > 0 {
			errs = append(errs, fmt.Sprintf("%s: %d errors", n, e))
		}
	}
	for _, p := range processes {
		if g := r.memory(p, r.warmup).growth(); g > 0.10 {
			errs = append(errs, fmt.Sprintf("%s RSS grew %.1f %% after the warm-up", p, g*100))
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}
