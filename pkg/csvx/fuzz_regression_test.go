package csvx_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/opencrm/crm/pkg/csvx"
	"github.com/opencrm/crm/pkg/problem"
)

// cutReader yields its text, then fails like a multipart part whose
// closing boundary never came.
type cutReader struct{ r io.Reader }

func (c *cutReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// TestReaderUploadCutInHeader is the regression test of a fuzz finding
// (contacts' FuzzImportUpload): an upload that ends early while the
// header is sniffed was a 500; it is the client's broken upload, a 422,
// whether the break shows while the header is read or at the first row.
func TestReaderUploadCutInHeader(t *testing.T) {
	t.Parallel()
	for _, body := range []string{"", "first_name\r\n", "first_name,last_name\nAda"} {
		r, err := csvx.NewReader(&cutReader{strings.NewReader(body)}, nil, csvx.Limits{MaxBytes: 1 << 20})
		for err == nil {
			_, err = r.Next()
		}
		p := problem.From(err)
		if p.Status != 422 || p.Code != "validation_failed" {
			t.Errorf("body %q: %d %s, want 422 validation_failed", body, p.Status, p.Code)
		}
	}
}
