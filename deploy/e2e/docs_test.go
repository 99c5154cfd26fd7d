package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDocsReference opens /docs in headless Chromium: Redoc loads from the
// gateway alone (its CSP allows only the gateway's origin), logs no console
// error or CSP violation, and shows the Contacts section with the Contact
// schema. DOCS_SCREENSHOT=<file.png> keeps a screenshot of that section
// (docs/api-reference.png was made so).
func TestDocsReference(t *testing.T) {
	t.Parallel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.Flag("disable-component-update", true), chromedp.WindowSize(1400, 1000))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	if p := os.Getenv("CHROME_PATH"); p != "" {
		opts = append(opts, chromedp.ExecPath(p))
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 30*time.Second)
	defer cancelTimeout()

	var mu sync.Mutex
	var consoleErrors []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				consoleErrors = append(consoleErrors, fmt.Sprintf("%s (%s %s)", m, m.Source, m.URL))
				mu.Unlock()
			}
		}
	}()

	const contacts = chromedp.CSS(`[id="tag/Contacts"]`)
	err := chromedp.Do(ctx,
		chromedp.Navigate(stack.URLs["gateway"]+"/docs"),
		chromedp.WaitVisible(contacts),
	)
	if err == nil {
		// The section's heading at the top of the screenshot.
		_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.getElementById("tag/Contacts").scrollIntoView(true), true)`))
	}
	if err == nil {
		err = chromedp.Do(ctx, chromedp.Sleep(500*time.Millisecond))
	}
	if err != nil {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("load /docs: %v; console:\n%s", err, strings.Join(consoleErrors, "\n"))
	}
	section, err := chromedp.Run(ctx, chromedp.Text(contacts))
	if err != nil {
		t.Fatal(err)
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Contacts", "first_name", "company_name", "assigned_to"} {
		if !strings.Contains(section, want) {
			t.Errorf("the Contacts section lacks %q (the Contact schema): %.300q", want, section)
		}
	}
	if title != "OpenCRM API reference" {
		t.Errorf("title %q", title)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(consoleErrors) > 0 {
		t.Errorf("the reference logged %d errors:\n%s", len(consoleErrors), strings.Join(consoleErrors, "\n"))
	}
	if p := os.Getenv("DOCS_SCREENSHOT"); p != "" {
		if err := os.WriteFile(p, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
