// Package pdf prints jobs to PDF with one long-lived headless Chromium per
// worker process (chromedp v0.23, generic API): a tab per job, a bounded
// number of tabs at once, and a fresh browser after a number of jobs or when
// the current one stops answering.
//
// Why one long-lived browser: starting Chromium costs ~0.5 s and ~100 MB;
// a tab costs a few milliseconds. Why restarts: a long-running browser
// accumulates memory (caches, fragmented heaps) and a crashed GPU or network
// process can leave it half-alive; replacing it every N jobs bounds both.
package pdf

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/opencrm/crm/pkg/renderq"
)

// ErrUnavailable means Chromium could not be started. The worker reports it
// to the waiting client as a 503, not as a bad job, and does not retry:
// a missing binary does not appear within seconds.
var ErrUnavailable = errors.New("pdf: chromium unavailable")

// ErrBrowserLost means the browser died during a print. The browser is
// replaced on the next job, so the job is worth retrying.
var ErrBrowserLost = errors.New("pdf: browser lost during print")

// Config tunes the renderer.
type Config struct {
	// ChromePath is the Chromium binary; empty means "chromium" on PATH.
	ChromePath string
	// Tabs bounds the jobs printed at once (one tab each).
	Tabs int
	// RestartAfter replaces the browser after this many jobs.
	RestartAfter int
	// JobTimeout bounds one print.
	JobTimeout time.Duration
	// MaxPages bounds the pages of a document (RENDER_MAX_PAGES); a longer
	// one is refused with *TooLongError, checked while printing.
	MaxPages int
	// NoSandbox passes --no-sandbox. Chromium's sandbox needs user namespaces
	// or a setuid helper and refuses to start as root; the container runs as
	// an unprivileged user with the sandbox on, only root needs this.
	NoSandbox bool
	// Logger receives browser lifecycle events.
	Logger *slog.Logger
	// OnRestart is called each time a browser is replaced, with the reason.
	OnRestart func(reason string)
}

// Renderer prints jobs. It is safe for concurrent use.
type Renderer struct {
	cfg  Config
	tabs chan struct{}

	mu     sync.Mutex
	cur    *browser
	closed bool
	old    sync.WaitGroup // browsers retired but still closing
}

// browser is one Chromium process and the jobs it served.
type browser struct {
	ctx       context.Context // chromedp browser context
	cancel    context.CancelFunc
	jobs      int
	unhealthy bool
	active    sync.WaitGroup
}

// New validates cfg. The browser starts lazily on the first job, or with
// Start, so a worker without Chromium still serves DOCX jobs.
func New(cfg Config) (*Renderer, error) {
	if cfg.ChromePath == "" {
		cfg.ChromePath = "chromium"
	}
	if cfg.Tabs < 1 {
		return nil, fmt.Errorf("pdf: Tabs must be at least 1, got %d", cfg.Tabs)
	}
	if cfg.RestartAfter < 1 {
		return nil, fmt.Errorf("pdf: RestartAfter must be at least 1, got %d", cfg.RestartAfter)
	}
	if cfg.JobTimeout <= 0 {
		cfg.JobTimeout = 30 * time.Second
	}
	if cfg.MaxPages <= 0 {
		cfg.MaxPages = 300
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.OnRestart == nil {
		cfg.OnRestart = func(string) {}
	}
	return &Renderer{cfg: cfg, tabs: make(chan struct{}, cfg.Tabs)}, nil
}

// Start launches the browser now, so the first job does not pay for it and
// a missing Chromium shows in the logs and the readiness probe at start-up.
func (r *Renderer) Start(ctx context.Context) error {
	b, err := r.acquire(ctx, false)
	if err != nil {
		return err
	}
	b.active.Done()
	return nil
}

// Ping checks that the current browser answers; it does not start one.
func (r *Renderer) Ping(ctx context.Context) error {
	r.mu.Lock()
	b := r.cur
	r.mu.Unlock()
	if b == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := chromedp.CallBrowser(b.ctx, browserGetVersion, cdp.Empty{}); err != nil || ctx.Err() != nil {
		r.mu.Lock()
		b.unhealthy = true
		r.mu.Unlock()
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

// Close stops every browser and waits until their processes are gone.
func (r *Renderer) Close() {
	r.mu.Lock()
	r.closed = true
	b := r.cur
	r.cur = nil
	if b != nil {
		r.retire(b)
	}
	r.mu.Unlock()
	r.old.Wait()
}

// Render prints the job to PDF.
func (r *Renderer) Render(ctx context.Context, job renderq.Job) ([]byte, error) {
	doc, breaks, err := document(job)
	if err != nil {
		return nil, err
	}
	// Thousands of forced page breaks are refused before a tab is taken;
	// twice the cap leaves documents near it to the exact count of the
	// print (see precheck).
	if breaks > 2*r.cfg.MaxPages {
		return nil, &TooLongError{MaxPages: r.cfg.MaxPages}
	}
	select {
	case r.tabs <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-r.tabs }()

	b, err := r.acquire(ctx, true)
	if err != nil {
		return nil, err
	}
	defer b.active.Done()

	out, err := r.print(ctx, b, doc, job)
	if err != nil && ctx.Err() == nil && (b.ctx.Err() != nil || errors.Is(err, chromedp.ErrChannelClosed)) {
		// The browser died under the job: replace it, and let asynq retry.
		r.mu.Lock()
		b.unhealthy = true
		r.mu.Unlock()
		return nil, fmt.Errorf("%w: %v", ErrBrowserLost, err)
	}
	return out, err
}

// acquire returns a healthy browser with an active user registered on it
// (and, when job is true, a job counted), starting or replacing it as needed.
func (r *Renderer) acquire(ctx context.Context, job bool) (*browser, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("%w: renderer closed", ErrUnavailable)
	}
	if b := r.cur; b != nil {
		reason := ""
		switch {
		case b.unhealthy || b.ctx.Err() != nil:
			reason = "unhealthy"
		case b.jobs >= r.cfg.RestartAfter:
			reason = "job_limit"
		}
		if reason != "" {
			r.cfg.Logger.Info("replacing browser", "reason", reason, "jobs", b.jobs)
			r.cfg.OnRestart(reason)
			r.retire(b)
			r.cur = nil
		}
	}
	if r.cur == nil {
		b, err := r.launch(ctx)
		if err != nil {
			return nil, err
		}
		r.cur = b
	}
	if job {
		r.cur.jobs++
	}
	r.cur.active.Add(1)
	return r.cur, nil
}

// retire closes b once its running jobs finish. r.mu is held.
func (r *Renderer) retire(b *browser) {
	r.old.Add(1)
	go func() {
		defer r.old.Done()
		b.active.Wait()
		b.cancel()
	}()
}

// flags are added to chromedp's defaults (which already disable background
// networking, sync, extensions, first-run and default-browser checks). None
// of them weakens web security: no --disable-web-security, no
// --allow-file-access-from-files, site isolation stays on.
func (r *Renderer) flags() []chromedp.ExecAllocatorOption {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(r.cfg.ChromePath),
		// Chromium otherwise reaches update and field-trial servers at start.
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("disable-crash-reporter", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.DisableGPU,
	)
	if r.cfg.NoSandbox {
		opts = append(opts, chromedp.NoSandbox)
	}
	return opts
}

// launch starts a browser; the allocator context is not derived from ctx
// because the browser outlives the job that happened to start it.
func (r *Renderer) launch(ctx context.Context) (*browser, error) {
	start := time.Now()
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), r.flags()...)
	// chromedp logs protocol oddities (such as DOM events for a document
	// that setDocumentContent replaced) through the standard logger; route
	// them to debug.
	debugf := func(format string, args ...any) { r.cfg.Logger.Debug(fmt.Sprintf(format, args...)) }
	bctx, bcancel := chromedp.NewContext(allocCtx, chromedp.WithErrorf(debugf), chromedp.WithLogf(debugf))
	cancel := func() {
		bcancel()
		allocCancel() // kills the process and waits for it: no zombies
	}
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(bctx) }()
	select {
	case err := <-started:
		if err != nil {
			cancel()
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	case <-time.After(30 * time.Second):
		cancel()
		return nil, fmt.Errorf("%w: start timed out", ErrUnavailable)
	case <-ctx.Done():
		cancel()
		return nil, ctx.Err()
	}
	r.cfg.Logger.Info("browser started", "took", time.Since(start).String())
	return &browser{ctx: bctx, cancel: cancel}, nil
}

var browserGetVersion = cdp.Command[cdp.Empty, cdp.Empty]{Method: "Browser.getVersion"}

// print runs one job in a new tab of b.
func (r *Renderer) print(ctx context.Context, b *browser, doc string, job renderq.Job) ([]byte, error) {
	// WithNewWindow(false): chromedp v0.23 opens each tab in its own window
	// otherwise, which costs ~40% of the time of a print.
	tctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewWindow(false))
	defer cancel()
	tctx, tcancel := context.WithTimeout(tctx, r.cfg.JobTimeout)
	defer tcancel()
	stop := context.AfterFunc(ctx, tcancel)
	defer stop()

	// Block every request except data: URLs. Events opens the tab and
	// subscribes before Fetch is enabled, so no paused request is missed;
	// each is answered from this goroutine.
	paused := chromedp.Events(tctx, fetch.RequestPaused)
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			if isData(ev.Request.URL) {
				_, _ = chromedp.Call(tctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
				continue
			}
			r.cfg.Logger.Warn("blocked request during print", "url", truncate(ev.Request.URL, 120))
			_, _ = chromedp.Call(tctx, fetch.FailRequest, fetch.FailRequestParams{
				RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient,
			})
		}
	}()
	if _, err := chromedp.Call(tctx, fetch.Enable, fetch.EnableParams{
		Patterns: []*fetch.RequestPattern{{URLPattern: "*"}},
	}); err != nil {
		return nil, fmt.Errorf("pdf: enable request blocking: %w", err)
	}
	if _, err := chromedp.Call(tctx, emulation.SetScriptExecutionDisabled,
		emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		return nil, fmt.Errorf("pdf: disable scripts: %w", err)
	}
	// The tab is about:blank; the content is set, never navigated to, so
	// there is no file:// or http:// origin to inherit. The main frame of a
	// page target has the target's id, which saves a Page.getFrameTree.
	frameID := cdp.FrameID(chromedp.FromContext(tctx).Target.TargetID)
	if _, err := chromedp.Call(tctx, page.SetDocumentContent, page.SetDocumentContentParams{
		FrameID: frameID, HTML: doc,
	}); err != nil {
		return nil, fmt.Errorf("pdf: set content: %w", err)
	}
	if err := r.precheck(tctx, job); err != nil {
		return nil, err
	}
	// The page cap is checked by Chromium itself while printing: it prints
	// at most MaxPages+1 pages (ranges past the end are capped to the page
	// count), so a document over the cap costs its layout and one page more
	// than the cap, never its full length; a count of MaxPages+1 means "too
	// long". Reading the count with pdfcpu costs ~1 ms for a seven-page
	// contract and ~16 ms at the cap, against hundreds of milliseconds and
	// seconds of printing (docs/benchmarks.md).
	params := PrintParams(job)
	params.PageRanges = fmt.Sprintf("1-%d", r.cfg.MaxPages+1)
	res, err := chromedp.Call(tctx, page.PrintToPDF, params)
	if err != nil {
		if tctx.Err() != nil && ctx.Err() == nil && b.ctx.Err() == nil {
			// The print's own deadline ended while the job's context and the
			// browser were fine: the content takes too long to lay out.
			return nil, &ContentTimeoutError{Limit: r.cfg.JobTimeout}
		}
		return nil, fmt.Errorf("pdf: print: %w", err)
	}
	n, err := pageCount(res.Data)
	if err != nil {
		return nil, err
	}
	if n > r.cfg.MaxPages {
		return nil, &TooLongError{MaxPages: r.cfg.MaxPages}
	}
	return res.Data, nil
}

func isData(u string) bool { return len(u) >= 5 && (u[:5] == "data:" || u[:5] == "DATA:") }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// PrintParams is the page setup of every print: A4, 20 mm margins, the
// three-cell header and footer, and tagging as the job asks (on by default:
// a tagged PDF has the structure tree, /MarkInfo and /Lang that assistive
// technology reads; see docs/decisions.md). A tagged PDF also gets the
// document outline (bookmarks from the headings), which Chromium builds from
// the same structure. Tagging comes from the job, never from the worker's
// configuration, because the job key is all that identifies a stored file.
// Exported so the benchmark's bare baseline prints exactly the same pages.
func PrintParams(job renderq.Job) page.PrintToPDFParams {
	const mm = 1 / 25.4
	margin := 20 * mm
	return page.PrintToPDFParams{
		DisplayHeaderFooter:     new(true),
		PrintBackground:         new(true),
		PaperWidth:              210 * mm,
		PaperHeight:             297 * mm,
		MarginTop:               &margin,
		MarginBottom:            &margin,
		MarginLeft:              &margin,
		MarginRight:             &margin,
		HeaderTemplate:          band(job.Header, true),
		FooterTemplate:          band(job.Footer, false),
		GenerateTaggedPDF:       new(job.Tagged),
		GenerateDocumentOutline: new(job.Tagged),
	}
}
