package httpx

import (
	"net/http"

	"github.com/opencrm/crm/pkg/problem"
)

// Routes serves mux and answers what it does not route as problem+json:
// 405 method_not_allowed with Allow when the path exists for other methods,
// 404 not_found otherwise. ServeMux knows the difference but writes both as
// plain text; a catch-all "/" pattern would hide the 405 entirely, so mux
// must not register one.
func Routes(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		if allow := Allowed(mux, r); allow != "" {
			problem.Write(w, r, NotAllowed(allow))
			return
		}
		problem.Write(w, r, problem.NotFound("route"))
	})
}

// Allowed is the Allow list of a request mux does not route: the methods
// its path takes, or "" when mux has no such path (a 404). ServeMux decides
// into a scratch writer; only its status and Allow header are kept.
func Allowed(mux *http.ServeMux, r *http.Request) string {
	var rec unrouted
	h, _ := mux.Handler(r)
	h.ServeHTTP(&rec, r)
	if rec.status != http.StatusMethodNotAllowed {
		return ""
	}
	return rec.header.Get("Allow")
}

// NotAllowed is the 405 for a method a path does not take, with Allow.
func NotAllowed(allow string) *problem.Error {
	return &problem.Error{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
		Title: http.StatusText(http.StatusMethodNotAllowed), Detail: "allowed methods: " + allow,
		Header: http.Header{"Allow": {allow}}}
}

// unrouted records what ServeMux's own 404/405 handler writes.
type unrouted struct {
	header http.Header
	status int
}

func (u *unrouted) Header() http.Header {
	if u.header == nil {
		u.header = http.Header{}
	}
	return u.header
}

func (u *unrouted) WriteHeader(status int) { u.status = status }

func (u *unrouted) Write(b []byte) (int, error) {
	if u.status == 0 {
		u.status = http.StatusOK
	}
	return len(b), nil
}
