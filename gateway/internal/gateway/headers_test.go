package gateway

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/problem/problemtest"
)

// raw sends one request exactly as written (bytes net/http would refuse to
// send) and reads the answer.
func (e *env) raw(t *testing.T, request string) response {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(request)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return response{status: resp.StatusCode, header: resp.Header, body: readAll(t, resp)}
}

// wantProblemBody asserts the status, the content type and the whole
// problem body, request id included.
func wantProblemBody(t *testing.T, r response, want problemBody) {
	t.Helper()
	b := problemtest.Want(t, r.status, r.header, r.body, want.Status, want.Code)
	got := problemBody{Type: b.Type, Title: b.Title, Status: b.Status, Detail: b.Detail, Code: b.Code, RequestID: b.RequestID}
	want.RequestID = r.header.Get("X-Request-Id")
	if want.RequestID == "" {
		t.Error("no X-Request-Id")
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("problem body (-want +got):\n%s", d)
	}
}

// TestInvalidRequestHeadersAre400: fasthttp accepts header names and values
// that net/http refuses to send (control characters in a value, separators
// in a name). They are the client's mistake, so the gateway answers 400
// bad_request before proxying, not 502 upstream_unavailable after a failed
// round trip; nothing reaches the service.
func TestInvalidRequestHeadersAre400(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	token := e.iss.User(t, 7)
	badName := problemBody{Type: "/docs/problems#bad_request", Title: "Bad Request", Status: 400, Code: "bad_request",
		Detail: "a request header has a name that is not a valid HTTP field name"}
	badValue := func(name string) problemBody {
		p := badName
		p.Detail = "request header " + name + " has a value that is not a valid HTTP field value"
		return p
	}
	tests := []struct {
		name   string
		header string // one raw header line
		want   problemBody
	}{
		{"NUL in value", "X-Note: a\x00b", badValue("X-Note")},
		{"SOH in value", "X-Note: a\x01b", badValue("X-Note")},
		{"DEL in value", "X-Note: a\x7fb", badValue("X-Note")},
		{"parenthesis in name", "X(Foo): 1", badName},
		{"at sign in name", "X@Foo: 1", badName},
		{"quote in name", `X"Foo: 1`, badName},
		{"SOH in a trusted proxy's X-Forwarded-For", "X-Forwarded-For: 198.51.100.7\x01", badValue("X-Forwarded-For")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.raw(t, "GET /api/contacts HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer "+token+"\r\n"+tc.header+"\r\nConnection: close\r\n\r\n")
			wantProblemBody(t, r, tc.want)
		})
	}
	if n := e.ups[SvcContacts].calls(); n != 0 {
		t.Errorf("contacts received %d calls, want 0", n)
	}
	if errs := e.logs.messages(t, "ERROR"); len(errs) != 0 {
		t.Errorf("error log lines for client mistakes: %q", errs)
	}
	// A tab and non-ASCII bytes are valid in a value and pass through.
	r := e.raw(t, "GET /api/contacts HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer "+token+"\r\nX-Note: a\tb \xc3\xa9\r\nConnection: close\r\n\r\n")
	if got := echoed(t, r).Header.Get("X-Note"); got != "a\tb \xc3\xa9" {
		t.Errorf("X-Note forwarded as %q", got)
	}
}

// TestForwardedForAcrossHeaderLines: a proxy in front (HAProxy with
// option forwardfor) may add its own X-Forwarded-For line instead of
// appending to the client's. All lines are one list (RFC 9110 section 5.3),
// read from the right, so the client's own line cannot choose its address,
// and all of it is forwarded.
func TestForwardedForAcrossHeaderLines(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.IPPerMinute = 2; c.UserPerMinute = 0 })
	token := e.iss.User(t, 7)
	send := func(lines ...string) response {
		h := ""
		for _, l := range lines {
			h += "X-Forwarded-For: " + l + "\r\n"
		}
		return e.raw(t, "GET /api/contacts HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer "+token+"\r\n"+h+"Connection: close\r\n\r\n")
	}
	// The client claims a new address each time; the proxy's line names
	// the real one, so the two requests share one bucket.
	for i, spoof := range []string{"6.6.6.1", "6.6.6.2"} {
		s := echoed(t, send(spoof, "198.51.100.7"))
		if d := cmp.Diff([]string{spoof + ", 198.51.100.7, 127.0.0.1"}, s.Header.Values("X-Forwarded-For")); d != "" {
			t.Errorf("request %d: forwarded X-Forwarded-For (-want +got):\n%s", i+1, d)
		}
	}
	wantProblem(t, send("6.6.6.3", "198.51.100.7"), http.StatusTooManyRequests, "rate_limited")
	// Another real client still has its budget.
	echoed(t, send("6.6.6.3", "198.51.100.8"))
}
