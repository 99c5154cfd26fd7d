package csvx

import (
	"bytes"
	"testing"
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
