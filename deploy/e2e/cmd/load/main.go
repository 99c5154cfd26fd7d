// Command load starts the real platform (every binary, as deploy/e2e does)
// and drives a realistic mix of requests through the gateway at a fixed
// rate for a fixed time: logins and refreshes, list and search, creates,
// updates, qualifications, public intake, contract generation, cached and
// uncached PDFs, CSV export. It prints throughput, p50/p95/p99 and errors
// per endpoint as a Markdown table, samples every process's resident
// memory (VmRSS, per process group) and writes RSS and latency over time
// as an SVG. It exits non-zero on any error, or when a process's RSS level
// (median over the run's last minute) exceeds its level over the warm-up's
// last minute by more than 10 % (the soak criterion of docs/reliability.md).
//
//	go run ./deploy/e2e/cmd/load -rate 10 -duration 12m -warmup 2m -svg docs/soak.svg
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/opencrm/crm/deploy/e2e"
)

type config struct {
	rate     float64
	duration time.Duration
	warmup   time.Duration
	workers  int
	svg      string
	sample   time.Duration
}

func main() {
	var c config
	flag.Float64Var(&c.rate, "rate", 20, "requests (operations) started per second")
	flag.DurationVar(&c.duration, "duration", time.Minute, "how long to drive load")
	flag.DurationVar(&c.warmup, "warmup", 20*time.Second, "first part of the run excluded from the RSS growth check")
	flag.IntVar(&c.workers, "workers", 32, "most operations in flight")
	flag.StringVar(&c.svg, "svg", "", "write RSS and latency over time to this SVG file")
	flag.DurationVar(&c.sample, "sample", 5*time.Second, "RSS and latency sampling interval")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	if c.rate <= 0 || c.duration <= 0 || c.workers <= 0 || c.warmup >= c.duration {
		return errors.New("rate, duration and workers must be positive and warmup shorter than duration")
	}
	bin, err := os.MkdirTemp("", "crm-load-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bin)
	bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if _, err := e2e.Build(bctx, bin); err != nil {
		return err
	}
	s, err := e2e.Start(bctx, bin, e2e.Options{Render: true, Env: map[string]string{
		// The load measures the platform, not the per-user quota.
		"CRM_RATE_LIMIT_USER_PER_MINUTE": "0", "CRM_RATE_LIMIT_IP_PER_MINUTE": "0",
	}})
	if err != nil {
		return err
	}
	defer s.Close()
	m, err := newMix(s)
	if err != nil {
		return err
	}
	res := drive(ctx, s, m, c)
	fmt.Print(res.markdown(c))
	if c.svg != "" {
		if err := os.WriteFile(c.svg, []byte(res.svg(c)), 0o644); err != nil {
			return err
		}
	}
	return res.verdict()
}
