package worker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/services/render/fixture"
	"github.com/opencrm/crm/services/render/internal/rendertest"
)

// hugeJob is a template that lays out to 10,000 A4 pages (257 mm of
// content height per page): the attack the page cap exists for. The
// worker's own sanitiser keeps inline styles, so it reaches Chromium as is.
func hugeJob(n int) renderq.Job {
	return renderq.Job{Format: renderq.PDF, Title: fmt.Sprintf("huge %d", n),
		HTML: fmt.Sprintf(`<div style="height: 2570000mm">huge %d</div>`, n)}
}

// TestHugeTemplateNeitherBlocksNorRetries: one user floods the renderer
// with 10,000-page templates while another downloads a seven-page contract.
// The flooder gets two renders in flight (the rest are 429 at once), each
// refused 422 document_too_long after a single print capped at 301 pages,
// never retried; the other user's PDF is printed while the flood's prints
// are still running, so it never waited behind them.
func TestHugeTemplateNeitherBlocksNorRetries(t *testing.T) {
	t.Parallel()
	env := rendertest.New(t)
	env.Config.PerUser = 2
	counting, _ := startWorker(t, env, os.Getenv("CHROME_PATH"))
	client := env.Client(t)
	ctx := context.Background()

	// Warm the browser so the comparison is not about start-up.
	if _, err := client.Render(ctx, fixture.Contract(renderq.PDF, 1), renderq.Interactive, "bob"); err != nil {
		t.Fatal(err)
	}
	before := counting.n.Load()

	start := time.Now()
	const flood = 6
	type outcome struct {
		err  error
		done time.Time
	}
	results := make([]outcome, flood)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			_, err := client.Render(ctx, hugeJob(i), renderq.Interactive, "mallory")
			results[i] = outcome{err, time.Now()}
		})
	}
	waitActive(t, env, 2)
	for i := 2; i < flood; i++ {
		wg.Go(func() {
			_, err := client.Render(ctx, hugeJob(i), renderq.Interactive, "mallory")
			results[i] = outcome{err, time.Now()}
		})
	}
	normal := fixture.Contract(renderq.PDF, fixture.Sections)
	data, err := client.Render(ctx, normal, renderq.Interactive, "bob")
	bobDone := time.Now()
	t.Logf("bob done %s", time.Since(start))
	if err != nil {
		t.Fatalf("bob's PDF during the flood: %v", err)
	}
	if n := pdfPageCount(t, data); n != 7 {
		t.Errorf("bob's PDF has %d pages, want 7", n)
	}
	wg.Wait()
	for i, r := range results {
		t.Logf("%d: %s %v", i, r.done.Sub(start), r.err)
	}

	var tooLong, busy int
	for i, r := range results {
		p := problem.From(r.err)
		switch p.Code {
		case "document_too_long":
			tooLong++
			want := problem.BodyOf(&problem.Error{Status: http.StatusUnprocessableEntity, Code: "document_too_long",
				Title: "Unprocessable Entity", Detail: "the document has more than 300 pages, the most that can be rendered; shorten it"}, "")
			if diff := cmp.Diff(want, problem.BodyOf(p, "")); diff != "" {
				t.Errorf("flood job %d (-want +got):\n%s", i, diff)
			}
			if !r.done.After(bobDone) {
				t.Errorf("flood job %d was refused before bob's PDF was done: bob waited behind it", i)
			}
		case "rate_limited":
			busy++
			if p.Status != http.StatusTooManyRequests || p.RetryAfter < 1 {
				t.Errorf("flood job %d: status %d Retry-After %d, want 429 with Retry-After", i, p.Status, p.RetryAfter)
			}
		default:
			t.Errorf("flood job %d: %v, want document_too_long or rate_limited", i, r.err)
		}
	}
	if tooLong != 2 || busy != flood-2 {
		t.Errorf("flood: %d document_too_long and %d rate_limited, want 2 and %d", tooLong, busy, flood-2)
	}
	// One print per huge job and one for bob's: nothing was retried.
	if got := counting.n.Load() - before; got != 3 {
		t.Errorf("prints during the flood = %d, want 3 (2 huge, 1 normal; no retries)", got)
	}
	insp := asynq.NewInspectorFromRedisClient(env.Redis)
	info, err := insp.GetQueueInfo(env.Config.Queues.Name(renderq.Interactive))
	if err != nil {
		t.Fatal(err)
	}
	if info.Retry != 0 || info.Archived != 0 || info.Pending != 0 || info.Active != 0 {
		t.Errorf("queue after the flood: retry %d archived %d pending %d active %d, want all 0",
			info.Retry, info.Archived, info.Pending, info.Active)
	}

	// The refusal is remembered briefly: downloading the same huge template
	// again does not print it again.
	_, err = client.Render(ctx, hugeJob(0), renderq.Interactive, "mallory")
	var tl *renderq.TooLongError
	if !errors.As(err, &tl) {
		t.Errorf("huge template again: %v, want *renderq.TooLongError", err)
	}
	if got := counting.n.Load() - before; got != 3 {
		t.Errorf("prints after asking again = %d, want still 3", got)
	}
}

// waitActive waits until n tasks run on the interactive queue.
func waitActive(t *testing.T, env rendertest.Env, n int) {
	t.Helper()
	insp := asynq.NewInspectorFromRedisClient(env.Redis)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		info, err := insp.GetQueueInfo(env.Config.Queues.Name(renderq.Interactive))
		if err == nil && info.Active >= n {
			return
		}
	}
	t.Fatalf("%d tasks never became active", n)
}

// pdfPageCount asks poppler's pdfinfo, independent of the renderer's own
// page count.
func pdfPageCount(t *testing.T, data []byte) int {
	t.Helper()
	cmd := exec.Command("pdfinfo", "-")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pdfinfo: %v", err)
	}
	var pages int
	for line := range strings.Lines(string(out)) {
		if _, err := fmt.Sscanf(line, "Pages: %d", &pages); err == nil {
			return pages
		}
	}
	t.Fatalf("pdfinfo gave no page count:\n%s", out)
	return 0
}
