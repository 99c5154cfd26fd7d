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

// hugeJob is a template that prints as 10,000 A4 pages, the attack the
// page cap exists for, in the three ways the worker meets it:
//
//   - kind 0, one box 10,000 pages tall (257 mm of content per page): its
//     on-screen layout is refused before printing;
//   - kind 1, 10,000 paragraphs each forcing a page break inline: counted
//     and refused before a tab is taken;
//   - kind 2, the same breaks set by a style sheet: invisible to both
//     shortcuts, laid out in full and printed up to the cap, the slow case.
//
// The worker's own sanitiser keeps styles, so all reach Chromium as written.
func hugeJob(n, kind int) renderq.Job {
	job := renderq.Job{Format: renderq.PDF, Title: fmt.Sprintf("huge %d", n)}
	switch kind {
	case 0:
		job.HTML = fmt.Sprintf(`<div style="height: 2570000mm">huge %d</div>`, n)
	case 1:
		job.HTML = fmt.Sprintf("<p>huge %d</p>", n) + inlineBreaks
	default:
		job.HTML = fmt.Sprintf("<style>p { break-after: page; }</style><p>huge %d</p>", n) + plainParagraphs
	}
	return job
}

// The bodies of the huge templates, built once.
var (
	inlineBreaks    = strings.Repeat(`<p style="break-after: page">x</p>`, 10_000)
	plainParagraphs = strings.Repeat(`<p>x</p>`, 10_000)
)

// TestHugeTemplateNeitherBlocksNorRetries: one user floods the renderer
// with 10,000-page templates of the slow kind (breaks from a style sheet,
// which only the capped print finds) while another downloads a seven-page
// contract. The flooder gets two renders in flight (the rest are 429 at
// once), each refused 422 document_too_long after a single print (capped at
// 301 pages, or stopped by the print timeout), never retried; the other
// user's PDF is printed while the flood's prints are still running, so it
// never waited behind them.
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

	const flood = 6
	type outcome struct {
		err  error
		done time.Time
	}
	results := make([]outcome, flood)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range 2 {
		wg.Go(func() {
			_, err := client.Render(ctx, hugeJob(i, 2), renderq.Interactive, "mallory")
			results[i] = outcome{err, time.Now()}
		})
	}
	waitActive(t, env, 2)
	for i := 2; i < flood; i++ {
		wg.Go(func() {
			_, err := client.Render(ctx, hugeJob(i, 2), renderq.Interactive, "mallory")
			results[i] = outcome{err, time.Now()}
		})
	}
	normal := fixture.Contract(renderq.PDF, fixture.Sections)
	data, err := client.Render(ctx, normal, renderq.Interactive, "bob")
	bobDone := time.Now()
	if err != nil {
		t.Fatalf("bob's PDF during the flood: %v", err)
	}
	t.Logf("bob's PDF after %s", bobDone.Sub(start))
	if n := pdfPageCount(t, data); n != 7 {
		t.Errorf("bob's PDF has %d pages, want 7", n)
	}
	wg.Wait()

	var tooLong, busy int
	for i, r := range results {
		t.Logf("flood job %d after %s: %v", i, r.done.Sub(start), r.err)
		p := problem.From(r.err)
		switch p.Code {
		case "document_too_long":
			tooLong++
			// Printed up to the cap, or stopped by the print timeout on a
			// loaded machine: either way refused for its content.
			got := problem.BodyOf(p, "")
			if cmp.Diff(tooLongBody(), got) != "" && cmp.Diff(tooHeavyBody(), got) != "" {
				t.Errorf("flood job %d: %+v, want %+v or %+v", i, got, tooLongBody(), tooHeavyBody())
			}
			if !r.done.After(bobDone) {
				t.Errorf("flood job %d ended before bob's PDF was done: bob waited behind it", i)
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
	wantQueueEmpty(t, env)

	// The refusal is remembered briefly: downloading the same huge template
	// again does not print it again.
	_, err = client.Render(ctx, hugeJob(0, 2), renderq.Interactive, "mallory")
	var tl *renderq.TooLongError
	if !errors.As(err, &tl) {
		t.Errorf("huge template again: %v, want *renderq.TooLongError", err)
	}
	if got := counting.n.Load() - before; got != 3 {
		t.Errorf("prints after asking again = %d, want still 3", got)
	}
}

func tooHeavyBody() problem.Body {
	return problem.BodyOf(&problem.Error{Status: http.StatusUnprocessableEntity, Code: "document_too_long",
		Title: "Unprocessable Entity", Detail: "the document's layout is too heavy to render in time (very long or very large content); shorten or simplify it"}, "")
}

// TestHugeTemplatesRefusedCheaply: the two kinds of 10,000-page template
// the worker recognises before printing are refused 422 on one attempt
// each, never retried, and a document just under the cap still prints.
func TestHugeTemplatesRefusedCheaply(t *testing.T) {
	t.Parallel()
	env := rendertest.New(t)
	counting, _ := startWorker(t, env, os.Getenv("CHROME_PATH"))
	client := env.Client(t)
	ctx := context.Background()
	for kind := range 2 {
		_, err := client.Render(ctx, hugeJob(kind, kind), renderq.Interactive, "mallory")
		if diff := cmp.Diff(tooLongBody(), problem.BodyOf(problem.From(err), "")); diff != "" {
			t.Errorf("kind %d (-want +got):\n%s", kind, diff)
		}
	}
	if got := counting.n.Load(); got != 2 {
		t.Errorf("render attempts = %d, want 2 (no retries)", got)
	}
	wantQueueEmpty(t, env)
	// 300 pages exactly (299 breaks after content, and the last page) is
	// within the cap: the shortcuts never refuse what the print accepts.
	job := renderq.Job{Format: renderq.PDF, Title: "at the cap",
		HTML: strings.Repeat(`<p style="break-after: page">x</p>`, 299) + `<p>last</p>`}
	data, err := client.Render(ctx, job, renderq.Interactive, "carol")
	if err != nil {
		t.Fatalf("300-page document: %v", err)
	}
	if n := pdfPageCount(t, data); n != 300 {
		t.Errorf("pages = %d, want 300", n)
	}
	over := job
	over.Title, over.HTML = "over the cap", job.HTML+`<p style="break-before: page">one more</p>`
	_, err = client.Render(ctx, over, renderq.Interactive, "carol")
	if diff := cmp.Diff(tooLongBody(), problem.BodyOf(problem.From(err), "")); diff != "" {
		t.Errorf("301 pages (-want +got):\n%s", diff)
	}
}

func tooLongBody() problem.Body {
	return problem.BodyOf(&problem.Error{Status: http.StatusUnprocessableEntity, Code: "document_too_long",
		Title: "Unprocessable Entity", Detail: "the document has more than 300 pages, the most that can be rendered; shorten it"}, "")
}

// wantQueueEmpty asserts that no task is left to retry, archived or waiting.
func wantQueueEmpty(t *testing.T, env rendertest.Env) {
	t.Helper()
	insp := asynq.NewInspectorFromRedisClient(env.Redis)
	// A task whose answer was published is marked done a moment later, so
	// active and pending get a few seconds to drain; a retry or an archive
	// stays, and fails the test.
	var info *asynq.QueueInfo
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if info, err = insp.GetQueueInfo(env.Config.Queues.Name(renderq.Interactive)); err != nil {
			t.Fatal(err)
		}
		if info.Retry != 0 || info.Archived != 0 || (info.Pending == 0 && info.Active == 0) || time.Now().After(deadline) {
			break
		}
	}
	if info.Retry != 0 || info.Archived != 0 || info.Pending != 0 || info.Active != 0 {
		t.Errorf("queue: retry %d archived %d pending %d active %d, want all 0",
			info.Retry, info.Archived, info.Pending, info.Active)
	}
}

// waitActive waits until n tasks run on the interactive queue.
func waitActive(t testing.TB, env rendertest.Env, n int) {
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
