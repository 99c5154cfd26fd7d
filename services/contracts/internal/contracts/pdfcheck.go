package contracts

import (
	"io"
	"path"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// parseablePDF reports whether rs parses as a PDF document: a cross-
// reference table (or stream) that resolves, a catalog with a page tree of
// at least one page, every object reachable from it well-formed (pdfcpu's
// relaxed validation, which accepts the small deviations common in files
// from signing services). A header and an end marker around anything else
// (an HTML page starting with "%PDF-") does not parse. The reason is for
// logs only.
func parseablePDF(rs io.ReadSeeker) (bool, string) {
	ctx, err := api.ReadContext(rs, pdfcpuConfig())
	if err != nil {
		return false, err.Error()
	}
	if err := api.ValidateContext(ctx); err != nil {
		return false, err.Error()
	}
	if ctx.PageCount < 1 {
		return false, "no pages"
	}
	return true, ""
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

// pdfName gives a stored signed copy a ".pdf" name whatever it was uploaded
// as: the content is a PDF (checked), so "contract.html" is stored and
// downloaded as "contract.html.pdf", never as something a browser or a
// desktop would open as another type.
func pdfName(name string) string {
	if strings.EqualFold(path.Ext(name), ".pdf") {
		return name
	}
	for len(name) > 255-len(".pdf") {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return name + ".pdf"
}
