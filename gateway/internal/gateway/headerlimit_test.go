package gateway

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHeaderBlockLimit: a request line plus header fields over the 32 KiB
// read buffer is refused before parsing with 431
// request_header_fields_too_large, whichever part is long, and nothing
// reaches a service; a block just under the limit is served.
func TestHeaderBlockLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	token := e.iss.User(t, 7)
	var query strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&query, "&f%d=%d", i, i)
	}
	tests := []struct {
		name, target, header string
	}{
		{"5,000 query parameters", "/api/contacts?" + query.String()[1:], "Authorization: Bearer " + token},
		{"a megabyte token", "/api/contacts", "Authorization: Bearer " + strings.Repeat(".", 1<<20)},
		{"one 40 KiB header", "/api/contacts", "Authorization: Bearer " + token + "\r\nX-Filler: " + strings.Repeat("x", 40<<10)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := rawRequest(t, e, "GET "+tc.target+" HTTP/1.1\r\nHost: x\r\n"+tc.header+"\r\n\r\n")
			got := wantProblem(t, r, http.StatusRequestHeaderFieldsTooLarge, "request_header_fields_too_large")
			want := problemBody{Type: "/docs/problems#request_header_fields_too_large", Title: "Request Header Fields Too Large",
				Status: 431, Detail: "the request line and header fields together exceed 32768 bytes",
				Code: "request_header_fields_too_large", RequestID: got.RequestID}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if v := r.header.Get("WWW-Authenticate"); v != "" {
				t.Errorf("WWW-Authenticate = %q on a 431", v)
			}
			if v := r.header.Get("X-Content-Type-Options"); v != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q", v)
			}
			if !r.close {
				t.Error("connection kept open after a refused header block")
			}
		})
	}
	t.Cleanup(func() {
		if n := e.ups[SvcContacts].calls(); n != 1 {
			t.Errorf("contacts received %d calls, want 1 (the request under the limit)", n)
		}
	})
	t.Run("just under the limit", func(t *testing.T) {
		t.Parallel()
		echoed(t, e.do(req{path: "/api/contacts", token: token, header: map[string]string{"X-Filler": strings.Repeat("x", 30<<10)}}))
	})
}

// rawRequest writes head on a new connection and reads the answer. The
// writer runs on its own: the gateway answers before it has read a long
// head, and a blocked write must not hold the read up.
func rawRequest(t *testing.T, e *env, head string) response {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() { _, _ = conn.Write([]byte(head)) }()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return response{status: resp.StatusCode, header: resp.Header, body: readAll(t, resp), close: resp.Close}
}
