package csvx

import (
	"bytes"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRowCounter: a row is a line end outside quotes, however the bytes
// arrive; a quoted line break or an escaped quote does not end one.
func TestRowCounter(t *testing.T) {
	t.Parallel()
	const file = "1,plain\n2,\"two\nlines\"\n3,\"say \"\"hi\"\"\"\n4,\"\"\n"
	for _, size := range []int{1, 3, len(file)} {
		var out bytes.Buffer
		c := &RowCounter{W: &out}
		for i := 0; i < len(file); i += size {
			if _, err := c.Write([]byte(file[i:min(i+size, len(file))])); err != nil {
				t.Fatal(err)
			}
		}
		if c.Rows != 4 || out.String() != file {
			t.Errorf("writes of %d bytes: %d rows, %q passed through", size, c.Rows, out.String())
		}
	}
}

// TestEmptyExportKeepsItsHeaders: an export without rows whose writer
// flushes before the download started still answers as a CSV attachment
// with its header line (a flush used to send the status bare).
func TestEmptyExportKeepsItsHeaders(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	dl := NewDownload(rec, "leads.csv", []string{"id", "email"})
	rows := &RowCounter{W: dl}
	rows.Flush() // what a COPY writer does at its end
	if err := dl.Start(); err != nil {
		t.Fatal(err)
	}
	dl.Flush()
	res := rec.Result()
	got := []string{res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"), rec.Body.String()}
	want := []string{"text/csv; charset=utf-8", `attachment; filename="leads.csv"`, "id,email\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("empty export (-want +got):\n%s", diff)
	}
}
