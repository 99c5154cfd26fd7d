package worker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/hibiken/asynq"

	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/services/render/fixture"
	"github.com/opencrm/crm/services/render/internal/docx"
	"github.com/opencrm/crm/services/render/internal/pdf"
	"github.com/opencrm/crm/services/render/internal/rendertest"
)

// benchConcurrency is the number of jobs in flight in both PDF benchmarks,
// and the worker's tab count.
const benchConcurrency = 4

// parallel runs b.N calls of fn over benchConcurrency goroutines and reports
// the throughput in PDF/s.
func parallel(b *testing.B, fn func(i int) error) {
	b.ResetTimer()
	elapsed, err := burst(b.N, fn)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "pdf/s")
}

// burst runs fn(1) to fn(n) over benchConcurrency goroutines and returns the
// wall time, or the first error.
func burst(n int, fn func(i int) error) (time.Duration, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, benchConcurrency)
	start := time.Now()
	for range benchConcurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				if i > n {
					return
				}
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	select {
	case err := <-errs:
		return elapsed, err
	default:
		return elapsed, nil
	}
}

// BenchmarkBarePrintToPDF is the baseline: one browser, a tab per job,
// setDocumentContent and PrintToPDF with the same page setup, and nothing
// else (no request blocking, no sanitising, no queue).
func BenchmarkBarePrintToPDF(b *testing.B) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-quic", true))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	if p := os.Getenv("CHROME_PATH"); p != "" {
		opts = append(opts, chromedp.ExecPath(p))
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	quiet := func(string, ...any) {}
	bctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithErrorf(quiet), chromedp.WithLogf(quiet))
	defer cancel()
	if err := chromedp.Do(bctx); err != nil {
		b.Fatal(err)
	}
	// The same document and page setup as the worker prints.
	job := fixture.Contract(renderq.PDF, fixture.Sections)
	doc, err := pdf.Document(job)
	if err != nil {
		b.Fatal(err)
	}
	params := pdf.PrintParams(job)
	parallel(b, func(int) error {
		tctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewWindow(false))
		defer cancel()
		tree, err := chromedp.Call(tctx, page.GetFrameTree, cdp.Empty{})
		if err != nil {
			return err
		}
		if _, err := chromedp.Call(tctx, page.SetDocumentContent, page.SetDocumentContentParams{FrameID: tree.FrameTree.Frame.ID, HTML: doc}); err != nil {
			return err
		}
		_, err = chromedp.Call(tctx, page.PrintToPDF, params)
		return err
	})
}

// BenchmarkWorkerPDF measures the whole path: client, asynq, worker,
// hardened print, Redis store, notification. Every job is new (the title
// carries the iteration), so the cache never answers.
func BenchmarkWorkerPDF(b *testing.B) {
	env := rendertest.New(b)
	startWorker(b, env, os.Getenv("CHROME_PATH"))
	client := env.Client(b)
	base := fixture.Contract(renderq.PDF, fixture.Sections)
	run := fmt.Sprint(time.Now().UnixNano())
	parallel(b, func(i int) error {
		job := base
		job.Title = fmt.Sprintf("%s %s-%d", base.Title, run, i)
		_, err := client.Render(context.Background(), job, renderq.Interactive, "")
		return err
	})
}

// BenchmarkTaggedPDF: throughput of tagged PDFs (the default) against
// untagged ones (RENDER_PDF_TAGGED=false) on the seven-page contract, side
// by side in one run on one browser: rounds alternate which of the two goes
// first, so a load spike on the shared machine hits both. Two paths:
// "worker" is the whole path (client, asynq, worker, Redis) with a client of
// each setting and a new job each time (the cache never answers);
// "renderer" is the worker's hardened print alone (pdf.Renderer, same
// browser), where tagging's cost is the largest share. Reports both rates,
// their ratio (target ≥ 0.9), the lowest and highest ratio of a single
// round (how noisy the machine was) and the mean file sizes.
func BenchmarkTaggedPDF(b *testing.B) {
	env := rendertest.New(b)
	counting, _ := startWorker(b, env, os.Getenv("CHROME_PATH"))
	untaggedCfg := env.Config
	untaggedCfg.PDFUntagged = true
	clients := map[bool]*renderq.Client{
		true:  env.Client(b),
		false: rendertest.Env{Config: untaggedCfg, Redis: env.Redis}.Client(b),
	}
	base := fixture.Contract(renderq.PDF, fixture.Sections)
	run := fmt.Sprint(time.Now().UnixNano())
	var seq atomic.Int64
	job := func(tagged bool) renderq.Job {
		j := base
		j.Tagged = tagged
		j.Title = fmt.Sprintf("%s %s-%d", base.Title, run, seq.Add(1))
		return j
	}
	paths := []struct {
		name  string
		print func(tagged bool) ([]byte, error)
	}{
		{"worker", func(tagged bool) ([]byte, error) {
			j := job(false) // the client's setting decides
			return clients[tagged].Render(context.Background(), j, renderq.Interactive, "")
		}},
		{"renderer", func(tagged bool) ([]byte, error) {
			return counting.Renderer.Render(context.Background(), job(tagged))
		}},
	}
	const rounds, perRound = 16, 8
	for _, path := range paths {
		b.Run("via="+path.name, func(b *testing.B) {
			var elapsed [2]time.Duration // untagged, tagged
			var size [2]atomic.Int64
			idx := func(tagged bool) int {
				if tagged {
					return 1
				}
				return 0
			}
			for _, tagged := range []bool{false, true} { // warm-up
				if _, err := path.print(tagged); err != nil {
					b.Fatal(err)
				}
			}
			roundRatios := make([]float64, 0, rounds)
			b.ResetTimer()
			for b.Loop() {
				for r := range rounds {
					var took [2]time.Duration
					for _, tagged := range []bool{r%2 == 0, r%2 != 0} {
						d, err := burst(perRound, func(int) error {
							data, err := path.print(tagged)
							size[idx(tagged)].Add(int64(len(data)))
							return err
						})
						if err != nil {
							b.Fatal(err)
						}
						took[idx(tagged)] = d
						elapsed[idx(tagged)] += d
					}
					roundRatios = append(roundRatios, took[0].Seconds()/took[1].Seconds())
				}
			}
			b.StopTimer()
			b.ReportMetric(slices.Min(roundRatios), "min-round-ratio")
			b.ReportMetric(slices.Max(roundRatios), "max-round-ratio")
			n := float64(rounds * perRound * b.N)
			untagged, tagged := n/elapsed[0].Seconds(), n/elapsed[1].Seconds()
			b.ReportMetric(untagged, "untagged-pdf/s")
			b.ReportMetric(tagged, "tagged-pdf/s")
			b.ReportMetric(tagged/untagged, "ratio")
			b.ReportMetric(float64(size[0].Load())/n/1024, "untagged-KB")
			b.ReportMetric(float64(size[1].Load())/n/1024, "tagged-KB")
		})
	}
}

// BenchmarkCachedDownload measures a repeated download of an unchanged
// contract and reports its p95.
func BenchmarkCachedDownload(b *testing.B) {
	env := rendertest.New(b)
	startWorker(b, env, os.Getenv("CHROME_PATH"))
	client := env.Client(b)
	job := fixture.Contract(renderq.PDF, fixture.Sections)
	if _, err := client.Render(context.Background(), job, renderq.Interactive, ""); err != nil {
		b.Fatal(err)
	}
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := client.Render(context.Background(), job, renderq.Interactive, ""); err != nil {
			b.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)*95/100].Microseconds())/1000, "p95-ms")
}

// BenchmarkDOCX measures the native DOCX writer on the same contract.
func BenchmarkDOCX(b *testing.B) {
	job := fixture.Contract(renderq.DOCX, fixture.Sections)
	for b.Loop() {
		if _, err := docx.Render(job); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPDFUnderFlood measures what one user's flood of 10,000-page
// templates costs another user: the p95 latency of a normal user's
// seven-page PDF (one at a time, each a new job) alone and while the
// flooder keeps as many huge templates in flight as it is allowed and
// retries every 429 at once, ignoring Retry-After, as fast as the gateway
// lets one user (CRM_RATE_LIMIT_USER_PER_MINUTE, 1200: 20 requests/s over
// its 4 goroutines); alone and flooded rounds are interleaved so both see
// the same machine. Reports both p95s and their ratio (target ≤ 1.5).
//
// Two floods: "inline" alternates the two kinds the worker refuses before
// printing (a 10,000-page box, 10,000 inline page breaks; the shapes a
// contract can carry), "stylesheet" sends breaks from a <style> sheet,
// which only the capped print finds (the worker accepts <style>; the
// contracts service's sanitiser removes it, so no user reaches it there).
func BenchmarkPDFUnderFlood(b *testing.B) {
	for _, flood := range []struct {
		name  string
		kinds []int
	}{{"inline", []int{0, 1}}, {"stylesheet", []int{2}}} {
		b.Run("flood="+flood.name, func(b *testing.B) { benchFlood(b, flood.kinds) })
	}
}

func benchFlood(b *testing.B, kinds []int) {
	env := rendertest.New(b)
	env.Config.PerUser = renderq.DefaultPerUser
	startWorker(b, env, os.Getenv("CHROME_PATH"))
	client := env.Client(b)
	base := fixture.Contract(renderq.PDF, fixture.Sections)
	run := fmt.Sprint(time.Now().UnixNano())
	var seq atomic.Int64
	normal := func() (time.Duration, error) {
		job := base
		job.Title = fmt.Sprintf("%s %s-%d", base.Title, run, seq.Add(1))
		start := time.Now()
		_, err := client.Render(context.Background(), job, renderq.Interactive, "bob")
		return time.Since(start), err
	}
	if _, err := normal(); err != nil { // warm the browser
		b.Fatal(err)
	}
	const rounds, perRound = 3, 15
	var alone, flooded []time.Duration
	var refused, busy, other atomic.Int64
	b.ResetTimer()
	for b.Loop() {
		for range rounds {
			for range perRound {
				d, err := normal()
				if err != nil {
					b.Fatal(err)
				}
				alone = append(alone, d)
			}
			ctx, stop := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for ctx.Err() == nil {
						n := int(seq.Add(1))
						job := hugeJob(n, kinds[n%len(kinds)])
						job.Title += " " + run
						_, err := client.Render(ctx, job, renderq.Interactive, "mallory")
						var tl *renderq.TooLongError
						var bz *renderq.BusyError
						switch {
						case errors.As(err, &tl):
							refused.Add(1)
						case errors.As(err, &bz):
							busy.Add(1)
							select {
							case <-ctx.Done():
							case <-time.After(200 * time.Millisecond):
							}
						case err != nil && ctx.Err() == nil:
							other.Add(1)
						}
					}
				})
			}
			for range perRound {
				d, err := normal()
				if err != nil {
					b.Fatal(err)
				}
				flooded = append(flooded, d)
			}
			stop()
			wg.Wait()
			// Let the flood's last prints end before the next quiet round.
			waitIdle(b, env)
		}
	}
	b.StopTimer()
	p95 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[(len(d)*95+99)/100-1].Microseconds()) / 1000
	}
	a, f := p95(alone), p95(flooded)
	b.ReportMetric(a, "alone-p95-ms")
	b.ReportMetric(f, "flood-p95-ms")
	b.ReportMetric(f/a, "ratio")
	b.ReportMetric(float64(refused.Load()), "huge-refused")
	b.ReportMetric(float64(busy.Load()), "huge-429")
	b.ReportMetric(float64(other.Load()), "huge-other-errors")
}

// waitIdle waits until no task runs or waits on the interactive queue.
func waitIdle(t testing.TB, env rendertest.Env) {
	t.Helper()
	insp := asynq.NewInspectorFromRedisClient(env.Redis)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		info, err := insp.GetQueueInfo(env.Config.Queues.Name(renderq.Interactive))
		if err == nil && info.Active == 0 && info.Pending == 0 {
			return
		}
	}
	t.Fatal("queue never became idle")
}
