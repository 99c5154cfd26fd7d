package httpx

import "net/http"

// HandlerFunc is the one handler shape of every service: it returns its
// error instead of writing it, so each failure reaches the single mapping
// to problem+json (pkg/problem) and no handler can forget to return after
// answering an error.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// ServeHTTP runs h and renders its error, if any, as problem+json.
func (h HandlerFunc) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h(w, r); err != nil {
		Error(w, r, err)
	}
}
