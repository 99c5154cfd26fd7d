package worker_test

import (
	"context"
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
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, benchConcurrency)
	b.ResetTimer()
	start := time.Now()
	for range benchConcurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				if i > b.N {
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
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "pdf/s")
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
