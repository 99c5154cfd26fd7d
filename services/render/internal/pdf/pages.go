package pdf

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// TooLongError means the document has more pages than the renderer's
// MaxPages. Retrying cannot help: the worker gives up at once.
type TooLongError struct {
	MaxPages int
}

func (e *TooLongError) Error() string {
	return fmt.Sprintf("pdf: the document has more than %d pages", e.MaxPages)
}

// ContentTimeoutError means the print of a document did not finish within
// the renderer's JobTimeout although the browser was healthy: its content
// is too heavy to lay out. Retrying would only take the slot again.
type ContentTimeoutError struct {
	Limit time.Duration
}

func (e *ContentTimeoutError) Error() string {
	return fmt.Sprintf("pdf: the document did not print within %s", e.Limit)
}

// pdfcpuConfig is pdfcpu's configuration without its configuration file:
// pdfcpu otherwise writes a config directory under the user's home at first
// use (and exits the process when it cannot, as on a read-only root file
// system). ConfigPath is pdfcpu's own switch for that, a package variable,
// so it is set once before any configuration is made.
func pdfcpuConfig() *model.Configuration {
	disableConfigFile.Do(func() { model.ConfigPath = "disable" })
	conf := model.NewDefaultConfiguration()
	conf.ValidationMode = model.ValidationRelaxed
	return conf
}

var disableConfigFile sync.Once

// pageCount reads the page count from the page tree of a PDF without
// validating every object: the file is Chromium's own output, and the
// count is what the page tree's root declares.
func pageCount(data []byte) (int, error) {
	ctx, err := api.ReadContext(bytes.NewReader(data), pdfcpuConfig())
	if err != nil {
		return 0, fmt.Errorf("pdf: read page count: %w", err)
	}
	if err := ctx.EnsurePageCount(); err != nil {
		return 0, fmt.Errorf("pdf: read page count: %w", err)
	}
	if ctx.PageCount < 1 {
		return 0, errors.New("pdf: printed document has no pages")
	}
	return ctx.PageCount, nil
}
