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
		// Let the mux decide 404 or 405 into a scratch writer; only its
		// status and Allow header are kept.
		var rec unrouted
		mux.ServeHTTP(&rec, r)
		if rec.status != http.StatusMethodNotAllowed {
			problem.Write(w, r, problem.NotFound("route"))
			return
		}
		allow := rec.header.Get("Allow")
		w.Header().Set("Allow", allow)
		problem.Write(w, r, &problem.Error{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
			Title: http.StatusText(http.StatusMethodNotAllowed), Detail: "allowed methods: " + allow})
	})
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
