package csvx

import (
	"io"
	"net/http"
)

// RowCounter counts the CSV rows written through it to W: line ends
// outside quoted fields (a quoted field may hold line breaks; an escaped
// quote "" toggles twice). An export writes its rows, not its header,
// through it, and records Rows (the audit log's row count).
type RowCounter struct {
	W      io.Writer
	Rows   int
	quoted bool
}

func (c *RowCounter) Write(p []byte) (int, error) {
	for _, b := range p {
		switch {
		case b == '"':
			c.quoted = !c.quoted
		case b == '\n' && !c.quoted:
			c.Rows++
		}
	}
	return c.W.Write(p)
}

// Flush flushes the download underneath, as the export flushes it.
func (c *RowCounter) Flush() {
	if f, ok := c.W.(http.Flusher); ok {
		f.Flush()
	}
}
