package worker_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/services/render/fixture"
	"github.com/opencrm/crm/services/render/internal/pdf"
	"github.com/opencrm/crm/services/render/internal/rendertest"
	"github.com/opencrm/crm/services/render/internal/worker"
)

// countingPDF counts the prints that really happen, to prove caching and
// de-duplication; it delegates to the real Chromium renderer.
type countingPDF struct {
	*pdf.Renderer
	n atomic.Int32
}

func (c *countingPDF) Render(ctx context.Context, job renderq.Job) ([]byte, error) {
	c.n.Add(1)
	return c.Renderer.Render(ctx, job)
}

// startWorker runs an in-process worker on env until the test ends.
func startWorker(t testing.TB, env rendertest.Env, chromePath string) (*countingPDF, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := worker.NewMetrics(reg, asynq.NewInspectorFromRedisClient(env.Redis), env.Config.Queues)
	if err != nil {
		t.Fatal(err)
	}
	// JobTimeout as in production (RENDER_JOB_TIMEOUT), below the wait.
	r, err := pdf.New(pdf.Config{ChromePath: chromePath, Tabs: 4, RestartAfter: 1000, NoSandbox: os.Geteuid() == 0,
		JobTimeout: 20 * time.Second, OnRestart: m.BrowserRestarted})
	if err != nil {
		t.Fatal(err)
	}
	counting := &countingPDF{Renderer: r}
	w, err := worker.New(env.Redis, worker.Config{
		Queues: env.Config.Queues, ResultTTL: time.Hour, Concurrency: 6, ShutdownTimeout: 5 * time.Second,
	}, counting, m, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		r.Close()
	})
	env.WaitForWorker(t)
	return counting, reg
}

func TestRenderThroughWorker(t *testing.T) {
	t.Parallel()
	env := rendertest.New(t)
	counting, reg := startWorker(t, env, os.Getenv("CHROME_PATH"))
	client := env.Client(t)

	tests := []struct {
		format renderq.Format
		magic  []byte
	}{
		{renderq.PDF, []byte("%PDF-")},
		{renderq.DOCX, []byte("PK\x03\x04")},
	}
	for _, tc := range tests {
		t.Run(string(tc.format), func(t *testing.T) {
			t.Parallel()
			job := fixture.Contract(tc.format, 3)
			// Three concurrent downloads of the same contract share one task.
			var wg sync.WaitGroup
			results := make([][]byte, 3)
			errs := make([]error, 3)
			for i := range results {
				wg.Go(func() { results[i], errs[i] = client.Render(t.Context(), job, renderq.Interactive, "") })
			}
			wg.Wait()
			for i := range results {
				if errs[i] != nil {
					t.Fatalf("render %d: %v", i, errs[i])
				}
				if !bytes.HasPrefix(results[i], tc.magic) {
					t.Fatalf("render %d: wrong magic %q", i, results[i][:min(8, len(results[i]))])
				}
			}
			// A repeated download is served from the store.
			again, err := client.Render(t.Context(), job, renderq.Batch, "")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, results[0]) {
				t.Error("cached file differs from the rendered one")
			}
		})
	}
	t.Cleanup(func() {
		if got := counting.n.Load(); got != 1 {
			t.Errorf("PDF printed %d times for 4 downloads of one contract, want 1", got)
		}
		if n := testutil.CollectAndCount(reg, "render_duration_seconds"); n == 0 {
			t.Error("no render duration recorded")
		}
	})
}

// TestTaggedIsPartOfTheResult: two clients configured differently
// (RENDER_PDF_TAGGED: the default, tagged, and false) download the same
// contract. Each gets its own print, stored under its own key, and one
// worker serves both settings; a repeated download of either is served from
// the store, not from the other's file.
func TestTaggedIsPartOfTheResult(t *testing.T) {
	t.Parallel()
	env := rendertest.New(t)
	counting, _ := startWorker(t, env, os.Getenv("CHROME_PATH"))
	untaggedCfg := env.Config
	untaggedCfg.PDFUntagged = true
	untagged := rendertest.Env{Config: untaggedCfg, Redis: env.Redis}.Client(t)
	tagged := env.Client(t)

	job := fixture.Contract(renderq.PDF, 2)
	job.Tagged = false // the client's setting decides
	tests := []struct {
		name      string
		client    *renderq.Client
		wantTags  bool
		wantPrint int32
	}{
		{"untagged", untagged, false, 1},
		{"tagged", tagged, true, 2},
		{"untagged again", untagged, false, 2},
		{"tagged again", tagged, true, 2},
	}
	for _, tc := range tests {
		data, err := tc.client.Render(t.Context(), job, renderq.Interactive, "")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := bytes.Contains(data, []byte("/StructTreeRoot")); got != tc.wantTags {
			t.Errorf("%s: tagged PDF = %v, want %v", tc.name, got, tc.wantTags)
		}
		if got := counting.n.Load(); got != tc.wantPrint {
			t.Errorf("%s: %d prints so far, want %d", tc.name, got, tc.wantPrint)
		}
	}
}

func TestNoWorkerIs503(t *testing.T) {
	t.Parallel()
	env := rendertest.New(t)
	client := env.Client(t)
	_, err := client.Render(t.Context(), renderq.Job{Format: renderq.PDF, HTML: "<p>x</p>"}, renderq.Interactive, "")
	var unavailable *renderq.UnavailableError
	if !errors.As(err, &unavailable) || unavailable.Reason != renderq.NoWorker {
		t.Fatalf("err = %v, want UnavailableError(no_worker)", err)
	}
	p := problem.From(err)
	if p.Status != http.StatusServiceUnavailable || p.RetryAfter <= 0 {
		t.Errorf("problem = %d retry-after %d, want 503 with Retry-After", p.Status, p.RetryAfter)
	}
}

func TestMissingChromiumIs503AndDOCXStillWorks(t *testing.T) {
	t.Parallel()
	env := rendertest.New(t)
	startWorker(t, env, "/nonexistent/chromium")
	client := env.Client(t)

	start := time.Now()
	_, err := client.Render(t.Context(), renderq.Job{Format: renderq.PDF, HTML: "<p>x</p>"}, renderq.Interactive, "")
	var unavailable *renderq.UnavailableError
	if !errors.As(err, &unavailable) || unavailable.Reason != renderq.RendererDown {
		t.Fatalf("err = %v, want UnavailableError(renderer_unavailable)", err)
	}
	if p := problem.From(err); p.Status != http.StatusServiceUnavailable {
		t.Errorf("status = %d, want 503", p.Status)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("missing Chromium took %s to report; the client should not wait for the timeout", took)
	}
	if _, err := client.Render(t.Context(), fixture.Contract(renderq.DOCX, 2), renderq.Interactive, ""); err != nil {
		t.Errorf("DOCX without Chromium: %v", err)
	}
	// The failed PDF task is not kept: its payload is the contract's HTML.
	insp := asynq.NewInspectorFromRedisClient(env.Redis)
	used, err := insp.Queues()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range env.Config.Queues.All() {
		if !slices.Contains(used, q) {
			continue
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			info, err := insp.GetQueueInfo(q)
			if err != nil {
				t.Fatal(err)
			}
			if info.Active+info.Pending+info.Retry == 0 {
				if info.Archived != 0 {
					t.Errorf("queue %s keeps %d archived task(s) after a failed render", q, info.Archived)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("queue %s still busy: %+v", q, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestTimeoutIs503(t *testing.T) {
	t.Parallel()
	env := rendertest.New(t)
	startWorker(t, env, os.Getenv("CHROME_PATH"))
	env.Config.Wait = time.Millisecond
	client := env.Client(t)
	_, err := client.Render(t.Context(), fixture.Contract(renderq.PDF, 40), renderq.Interactive, "")
	var unavailable *renderq.UnavailableError
	if !errors.As(err, &unavailable) || unavailable.Reason != renderq.TimedOut {
		t.Fatalf("err = %v, want UnavailableError(timeout)", err)
	}
}
