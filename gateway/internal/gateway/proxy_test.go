package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/problem/problemtest"
)

func TestRoutingStripsAPIAndKeepsQuery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	user := e.iss.User(t, 7)
	tests := []struct {
		method, path, service, upstream, query string
	}{
		{"GET", "/api/contacts?page=2&per_page=10&search=a%20b&sort_dir=DESC", SvcContacts, "/contacts", "page=2&per_page=10&search=a%20b&sort_dir=DESC"},
		{"GET", "/api/contacts/7", SvcContacts, "/contacts/7", ""},
		{"POST", "/api/contacts/7/notes", SvcContacts, "/contacts/7/notes", ""},
		{"GET", "/api/contacts/7/linked-emails", SvcMail, "/contacts/7/linked-emails", ""},
		{"GET", "/api/companies?search=acme", SvcContacts, "/companies", "search=acme"},
		{"GET", "/api/leads/match-company?company=Acme+Inc", SvcLeads, "/leads/match-company", "company=Acme+Inc"},
		{"POST", "/api/leads/3/qualify", SvcLeads, "/leads/3/qualify", ""},
		{"GET", "/api/leads/3/linked-emails", SvcMail, "/leads/3/linked-emails", ""},
		{"POST", "/api/leads/import", SvcLeads, "/leads/import", ""},
		{"GET", "/api/deal-stages", SvcDeals, "/deal-stages", ""},
		{"GET", "/api/deals/4/quotes", SvcDeals, "/deals/4/quotes", ""},
		{"PUT", "/api/quotes/4", SvcDeals, "/quotes/4", ""},
		{"GET", "/api/contracts?status=active,executed", SvcContracts, "/contracts", "status=active,executed"},
		{"GET", "/api/contracts/5/pdf", SvcContracts, "/contracts/5/pdf", ""},
		{"GET", "/api/contracts/5/executed", SvcContracts, "/contracts/5/executed", ""},
		{"POST", "/api/contracts/5/executed", SvcContracts, "/contracts/5/executed", ""},
		{"POST", "/api/emails", SvcMail, "/emails", ""},
		{"GET", "/api/mailboxes", SvcMail, "/mailboxes", ""},
		{"GET", "/api/auth/me", SvcIdentity, "/auth/me", ""},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			s := echoed(t, e.do(req{method: tc.method, path: tc.path, token: user}))
			if s.Service != tc.service || s.Method != tc.method || s.Path != tc.upstream || s.Query != tc.query {
				t.Errorf("upstream saw %s %s %s ?%s, want %s %s %s ?%s", s.Service, s.Method, s.Path, s.Query, tc.service, tc.method, tc.upstream, tc.query)
			}
		})
	}
}

// TestUndeclaredAnsweredHere: a path or method no route declares is
// answered by the gateway exactly as the service's router answers it
// (httpx.Routes): 404 not_found, or 405 method_not_allowed with Allow;
// the credential is still checked first, as when the service answered.
func TestUndeclaredAnsweredHere(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	user := e.iss.User(t, 7)
	tests := []struct {
		name, method, path, token string
		status                    int
		code, detail, allow       string
	}{
		{"method", "PATCH", "/api/deals/4", user, 405, "method_not_allowed", "allowed methods: DELETE, GET, HEAD, PUT", "DELETE, GET, HEAD, PUT"},
		{"method of an admin path", "PATCH", "/api/users/4", user, 405, "method_not_allowed", "allowed methods: DELETE, GET, HEAD, PUT", "DELETE, GET, HEAD, PUT"},
		{"method without a credential", "PATCH", "/api/deals/4", "", 401, "unauthenticated", "", ""},
		{"path", "GET", "/api/deals/4/nothing", user, 404, "not_found", "route not found", ""},
		{"path without a credential", "GET", "/api/deals/4/nothing", "", 404, "not_found", "route not found", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(req{method: tc.method, path: tc.path, token: tc.token})
			p := wantProblem(t, r, tc.status, tc.code)
			if tc.detail != "" && p.Detail != tc.detail {
				t.Errorf("detail %q, want %q", p.Detail, tc.detail)
			}
			if got := r.header.Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
		})
	}
	if n := e.ups[SvcDeals].calls() + e.ups[SvcIdentity].calls(); n != 0 {
		t.Errorf("the services received %d calls", n)
	}
}

func TestPublicAuthRoutesNeedNoToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, p := range []struct{ method, path string }{
		{"POST", "/api/auth/login"}, {"POST", "/api/auth/refresh"}, {"POST", "/api/auth/logout"}, {"GET", "/api/auth/jwks"},
	} {
		s := echoed(t, e.do(req{method: p.method, path: p.path, body: strings.NewReader(`{"email":"a@b.c"}`)}))
		if s.Service != SvcIdentity || s.Path != strings.TrimPrefix(p.path, "/api") {
			t.Errorf("%s %s reached %s %s", p.method, p.path, s.Service, s.Path)
		}
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	admin := e.iss.Admin(t, 1)
	for _, p := range []string{
		"/api/internal/x", identityapi.PathUsers, "/api" + identityapi.PathVerifyKey, "/api/Internal/users",
		"/api/contacts/%2e%2e/internal/users", "/api/contacts/../internal/users", "/api/nope", "/api", "/api/",
		"/", "/contactsx", "/api/contactsx", "/API/contacts",
	} {
		t.Run(p, func(t *testing.T) {
			wantProblem(t, e.do(req{path: p, token: admin, header: map[string]string{internalTokenHeader: testSecret}}), http.StatusNotFound, "not_found")
		})
	}
	for name, u := range e.ups {
		if n := u.calls(); n != 0 {
			t.Errorf("%s received %d calls", name, n)
		}
	}
}

const internalTokenHeader = "X-Internal-Token"

func TestForwardedHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	user := e.iss.User(t, 7)
	s := echoed(t, e.do(req{path: "/api/contacts", token: user, header: map[string]string{
		"X-Internal-Token": testSecret, "X-Forwarded-For": "203.0.113.9", "Traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"X-Real-Ip": "1.2.3.4",
	}}))
	if got := s.Header.Values("X-Internal-Token"); len(got) != 0 {
		t.Errorf("X-Internal-Token reached the service: %q", got)
	}
	if got := s.Header.Get("Authorization"); got != "Bearer "+user {
		t.Errorf("Authorization = %q", got)
	}
	if got := s.Header.Get("X-Forwarded-For"); got != "203.0.113.9, 127.0.0.1" {
		t.Errorf("X-Forwarded-For = %q", got)
	}
	if got := s.Header.Get("Traceparent"); got == "" {
		t.Error("traceparent not forwarded")
	}
	if got := s.Header.Get("X-Real-Ip"); got != "" {
		t.Errorf("X-Real-Ip = %q, want it dropped", got)
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestRequestID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	user := e.iss.User(t, 7)
	tests := []struct {
		name, sent string
		keep       bool
	}{
		{"generated", "", false},
		{"accepted", "req-123.abc:XYZ_9", true},
		{"too long replaced", strings.Repeat("a", 129), false},
		{"bad characters replaced", "abc def<script>", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.sent != "" {
				h["X-Request-Id"] = tc.sent
			}
			r := e.do(req{path: "/api/contacts", token: user, header: h})
			s := echoed(t, r)
			got := r.header.Get("X-Request-Id")
			if tc.keep && got != tc.sent {
				t.Errorf("X-Request-Id = %q, want %q", got, tc.sent)
			}
			if !tc.keep && !uuidRE.MatchString(got) {
				t.Errorf("X-Request-Id = %q, want a generated uuid", got)
			}
			if fwd := s.Header.Values("X-Request-Id"); len(fwd) != 1 || fwd[0] != got {
				t.Errorf("forwarded X-Request-Id = %q, want [%q]", fwd, got)
			}
			// Problems carry it too.
			p := wantProblem(t, e.do(req{path: "/api/contacts", header: h}), http.StatusUnauthorized, "unauthenticated")
			if tc.keep && p.RequestID != tc.sent {
				t.Errorf("problem request_id = %q", p.RequestID)
			}
		})
	}
}

func TestBodyLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	user, admin := e.iss.User(t, 7), e.iss.Admin(t, 1)
	key := "crm_live_body_limits"
	e.identity.AddKey(key, identityapi.VerifiedKey{})
	tests := []struct {
		name, method, path, token string
		header                    map[string]string
		size                      int64
		chunked                   bool
	}{
		{"json over 1 MB", "POST", "/api/contacts", user, nil, route.LimitJSON + 1, false},
		{"json over 1 MB chunked", "POST", "/api/contacts", user, nil, 4 << 20, true},
		{"public lead over 64 KB", "POST", "/api/public/leads", "", map[string]string{"X-API-Key": key}, route.LimitPublic + 1, false},
		{"public lead over 64 KB chunked", "POST", "/api/public/leads", "", map[string]string{"X-API-Key": key}, 1 << 20, true},
		{"signed copy over 26 MB", "POST", "/api/contracts/5/executed", user, nil, route.LimitExecuted + 1, false},
		{"contact import over 21 MB", "POST", "/api/contacts/import", admin, nil, route.LimitImport + 1, false},
		{"lead import over 21 MB chunked", "POST", "/api/leads/import", user, nil, route.LimitImport + 1<<20, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			length := tc.size
			if tc.chunked {
				length = -1
			}
			r := e.do(req{method: tc.method, path: tc.path, token: tc.token, header: tc.header,
				body: io.LimitReader(zeros{}, tc.size), length: length})
			wantProblem(t, r, http.StatusRequestEntityTooLarge, "payload_too_large")
		})
	}
	// Within the limits, bodies stream through intact.
	ok := []struct {
		name, method, path, token string
		size                      int64
	}{
		{"json of 1 MB", "POST", "/api/contacts", user, route.LimitJSON},
		{"contact import of 20 MB", "POST", "/api/contacts/import", admin, 20 << 20},
		{"signed copy of 25 MB chunked", "POST", "/api/contracts/5/executed", user, 25 << 20},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			length := tc.size
			if strings.Contains(tc.name, "chunked") {
				length = -1
			}
			s := echoed(t, e.do(req{method: tc.method, path: tc.path, token: tc.token,
				body: io.LimitReader(zeros{}, tc.size), length: length}))
			h := sha256.New()
			_, _ = io.Copy(h, io.LimitReader(zeros{}, tc.size))
			if s.BodyLen != tc.size || s.BodySHA256 != hex.EncodeToString(h.Sum(nil)) {
				t.Errorf("upstream got %d bytes (%s), want %d", s.BodyLen, s.BodySHA256, tc.size)
			}
		})
	}
}

// TestCompressedBodiesAreRefusedWithoutInflating posts a 2.6 KB double-gzip
// of 1 GiB of zeros (testdata/bomb.gz.gz, made with
// `head -c 1G /dev/zero | gzip -9 | gzip -9`). It is not parallel because it
// measures the process's allocations.
func TestCompressedBodiesAreRefusedWithoutInflating(t *testing.T) {
	bomb, err := os.ReadFile("testdata/bomb.gz.gz")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, nil)
	user, admin := e.iss.User(t, 7), e.iss.Admin(t, 1)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, tc := range []struct{ path, token, encoding string }{
		{"/api/contacts", user, "gzip, gzip"},
		{"/api/contacts", user, "gzip"},
		{"/api/contacts/import", admin, "gzip"},
		{"/api/leads", user, "deflate"},
		{"/api/contacts", user, "br"},
	} {
		r := e.do(req{method: "POST", path: tc.path, token: tc.token, body: bytes.NewReader(bomb),
			header: map[string]string{"Content-Encoding": tc.encoding, "Content-Type": "application/json"}})
		wantProblem(t, r, http.StatusUnsupportedMediaType, "unsupported_media_type")
	}
	runtime.ReadMemStats(&after)
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KiB while refusing 5 bombs", grew>>10)
	if grew > 64<<20 {
		t.Errorf("the process allocated %d MiB while refusing a gzip bomb", grew>>20)
	}
	if n := e.ups[SvcContacts].calls(); n != 0 {
		t.Errorf("contacts received %d calls", n)
	}
	// identity is still accepted.
	echoed(t, e.do(req{method: "POST", path: "/api/contacts", token: user, body: strings.NewReader(`{}`),
		header: map[string]string{"Content-Encoding": "identity"}}))
}

// TestLargeDownloadStreams proxies a 256 MiB answer. It is not parallel
// because it checks that the process did not hold the body in memory.
func TestLargeDownloadStreams(t *testing.T) {
	e := newEnv(t, nil)
	const size = 256 << 20
	hr, err := http.NewRequest("GET", e.base+"/api/contracts/5/pdf?stream=268435456", nil)
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Authorization", "Bearer "+e.iss.User(t, 7))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, err := e.client.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if resp.StatusCode != http.StatusOK || n != size {
		t.Fatalf("status %d, %d bytes; want 200, %d", resp.StatusCode, n, size)
	}
	if got := resp.Header.Get("Content-Disposition"); got != `attachment; filename="big.bin"` {
		t.Errorf("Content-Disposition = %q", got)
	}
	if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options = %q", got)
	}
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KiB (client, gateway and upstream together) to proxy %d MiB", grew>>10, size>>20)
	if grew > 64<<20 {
		t.Errorf("the process allocated %d MiB to proxy %d MiB", grew>>20, size>>20)
	}
}

func TestUpstreamFailures(t *testing.T) {
	t.Parallel()
	down := closedURL(t)
	e := newEnv(t, func(c *Config) {
		c.Services[SvcLeads] = down
		c.UpstreamTimeout = 300 * time.Millisecond
	})
	user := e.iss.User(t, 7)
	r := e.do(req{path: "/api/leads", token: user})
	wantProblem(t, r, http.StatusServiceUnavailable, "upstream_unavailable")
	if r.header.Get("Retry-After") == "" {
		t.Error("Retry-After missing on 503")
	}
	if strings.Contains(string(r.body), "127.0.0.1") || strings.Contains(string(r.body), "refused") {
		t.Errorf("problem leaks internals: %s", r.body)
	}
	wantProblem(t, e.do(req{path: "/api/contacts/slow", token: user}), http.StatusGatewayTimeout, "upstream_timeout")
	// The gateway keeps serving after both.
	echoed(t, e.do(req{path: "/api/contacts", token: user}))
}

func TestForwardedForFromUntrustedPeerIsReplaced(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.TrustedProxies = nil })
	s := echoed(t, e.do(req{path: "/api/contacts", token: e.iss.User(t, 7), header: map[string]string{"X-Forwarded-For": "203.0.113.9"}}))
	if got := s.Header.Values("X-Forwarded-For"); len(got) != 1 || got[0] != "127.0.0.1" {
		t.Errorf("X-Forwarded-For = %q, want [127.0.0.1]", got)
	}
}

func TestExpectContinueAndHead(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	user := e.iss.User(t, 7)
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 5 * time.Second}}
	defer client.CloseIdleConnections()
	const size = 3 << 20
	hr, err := http.NewRequest("POST", e.base+"/api/contracts/5/executed", io.LimitReader(zeros{}, size))
	if err != nil {
		t.Fatal(err)
	}
	hr.ContentLength = size
	hr.Header.Set("Expect", "100-continue")
	hr.Header.Set("Authorization", "Bearer "+user)
	resp, err := client.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	s := echoed(t, response{status: resp.StatusCode, header: resp.Header, body: readAll(t, resp)})
	_ = resp.Body.Close()
	if s.BodyLen != size || s.Header.Get("Expect") != "" {
		t.Errorf("upstream got %d bytes, Expect %q", s.BodyLen, s.Header.Get("Expect"))
	}

	// Refused before the body is sent: the client gets the problem.
	hr, err = http.NewRequest("POST", e.base+"/api/contacts", io.LimitReader(zeros{}, size))
	if err != nil {
		t.Fatal(err)
	}
	hr.ContentLength = size
	hr.Header.Set("Expect", "100-continue")
	hr.Header.Set("Authorization", "Bearer "+user)
	resp, err = client.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	wantProblem(t, response{status: resp.StatusCode, header: resp.Header, body: readAll(t, resp)}, http.StatusRequestEntityTooLarge, "payload_too_large")
	_ = resp.Body.Close()

	r := e.do(req{method: "HEAD", path: "/api/contacts/7", token: user})
	if r.status != http.StatusOK || len(r.body) != 0 || r.header.Get("X-Upstream") != SvcContacts {
		t.Errorf("HEAD: %d %q %v", r.status, r.body, r.header)
	}
}

// TestNonCanonicalPathsAreRefused: a path the client sent in non-canonical
// form is 404 problem+json at the gateway and never reaches a service, so
// the gateway's rule and the service's router cannot disagree on it (a
// trailing "/." once matched the catch-all rule of the resource, and the
// service answered a raw 307 text/html to a path without /api).
func TestNonCanonicalPathsAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	admin := e.iss.Admin(t, 1)
	const detail = "no route has this path: it is not in canonical form (an empty, '.' or '..' segment, or an encoded '/' or '\\')"
	for _, tc := range []struct{ method, path string }{
		{"GET", "/api/contacts/5/."},
		{"GET", "/api/contacts/5/.."},
		{"GET", "/api/contacts/./5"},
		{"GET", "/api/contacts//5"},
		{"GET", "/api//contacts"},
		{"GET", "/api/contacts/5/"},
		{"GET", "/api/contacts/%2e"},
		{"GET", "/api/contacts/%2E%2E/5"},
		{"GET", "/api/contracts/1%2Fexecuted"},
		{"GET", "/api/contracts/1%2fexecuted"},
		{"GET", "/api/contracts/1%5Cexecuted"},
		{"DELETE", "/api/contracts/1/executed/."},
		{"POST", "/api/auth/login/."},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := e.do(req{method: tc.method, path: tc.path, token: admin})
			p := wantProblem(t, r, http.StatusNotFound, "not_found")
			want := problemBody{Type: "/docs/problems#not_found", Title: "Not Found", Status: 404, Detail: detail, Code: "not_found", RequestID: p.RequestID}
			if diff := cmp.Diff(want, p); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if loc := r.header.Get("Location"); loc != "" {
				t.Errorf("Location %q: a non-canonical path is refused, never redirected", loc)
			}
		})
	}
	for name, u := range e.ups {
		if n := u.calls(); n != 0 {
			t.Errorf("%s received %d calls", name, n)
		}
	}
	// The canonical form of the same resource is routed as usual.
	r := e.do(req{path: "/api/contacts/5", token: admin})
	if r.status != http.StatusOK || echoed(t, r).Path != "/contacts/5" {
		t.Errorf("canonical path: %d %s", r.status, r.body)
	}
}

func TestCanonical(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]bool{
		"/api/contacts/5": true, "/api/contacts/5/notes": true, "/api/contacts/J%C3%BCrgen": true,
		"/api/contacts/5%": false, "/api/contacts/%zz": false, "api/contacts": false, "/api/contacts\\5": false,
		"/api/contacts/5/": false, "/api//contacts": false, "/api/contacts/%2e%2E": false, "/api/a%2Fb": false,
	} {
		if got := Canonical(raw); got != want {
			t.Errorf("Canonical(%q) = %v, want %v", raw, got, want)
		}
	}
}

// TestDispatchByQuery: GET /history goes to the context that owns its
// object; any other object, or none, is a 422 naming object, and a
// person without the admin role is refused before any of that.
func TestDispatchByQuery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	admin := e.iss.Admin(t, 1)
	for object, svc := range map[string]string{"contact": SvcContacts, "company": SvcContacts, "lead": SvcLeads,
		"deal": SvcDeals, "quote": SvcDeals, "contract": SvcContracts, "template": SvcContracts} {
		s := echoed(t, e.do(req{path: "/api/history?object=" + object + "&id=3", token: admin}))
		if s.Service != svc || s.Path != "/history" || s.Query != "object="+object+"&id=3" {
			t.Errorf("object %s reached %s %s?%s, want %s", object, s.Service, s.Path, s.Query, svc)
		}
	}
	for _, q := range []string{"?id=3", "?object=note&id=3", "?object=Contact&id=3", "?object="} {
		r := e.do(req{path: "/api/history" + q, token: admin})
		b := problemtest.Want(t, r.status, r.header, r.body, http.StatusUnprocessableEntity, "validation_failed", "object")
		if want := "must be one of: company, contact, contract, deal, lead, quote, template"; len(b.Errors) != 1 || b.Errors[0].Message != want {
			t.Errorf("%s: errors %+v, want object %q", q, b.Errors, want)
		}
	}
	wantProblem(t, e.do(req{path: "/api/history?object=contact&id=3", token: e.iss.User(t, 2)}), http.StatusForbidden, "forbidden")
	wantProblem(t, e.do(req{path: "/api/history?object=contact&id=3"}), http.StatusUnauthorized, "unauthenticated")
}
