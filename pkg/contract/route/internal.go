package route

import (
	"fmt"
	"net/http"
	"strings"
)

// Internal is one operation of a context's internal API: a route another
// context calls with the cluster secret (X-Internal-Token), never through
// the gateway. Contexts are deployed one at a time, so a release of the
// caller and one of the callee run side by side: the internal API changes
// additively only, like the public one, and each context's declarations
// are turned into a released document the gate compares with
// (docs/releasing.md). The pattern constants (contactsapi.RouteContact…)
// stay what services mount and clients call; a declaration is built from
// its constant with At, so the path is still spelled once.
type Internal struct {
	Method string
	// Path is the path the serving context mounts (under /internal/).
	Path string
	// Service is the context that serves it: a route every context of a
	// list serves (a merge's move, a privacy request's part) is declared
	// once per serving context.
	Service string
	Summary string
	// Description adds to the summary where the summary is not enough.
	Description string
	// Query lists the query parameters the route reads.
	Query []Param
	// IdempotencyKey marks a write that requires an Idempotency-Key
	// header: the same key and body answer the first answer again.
	IdempotencyKey bool
	// Request is a zero value of the body's Go type, the one the service
	// decodes; nil means no body.
	Request any
	// Status is the success status; 0 means 200.
	Status int
	// Response is a zero value of the success answer's Go type.
	Response any
	// Problems are the error statuses the route answers beyond the ones
	// every internal route may (401 without the secret, 404 for an
	// unknown {id}, 400/413/415/422 for a bad body or query, 5xx).
	Problems []int
}

// At is r declared at pattern, a "METHOD /internal/..." constant of a
// contract package (what the service mounts): Method and Path are taken
// from it. A pattern of another shape is a mistake in a declaration and
// panics when the package loads.
func At(pattern string, r Internal) Internal {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok || method == "" || strings.ToUpper(method) != method || !strings.HasPrefix(path, InternalPrefix) {
		panic(fmt.Sprintf("route: internal pattern %q is not \"METHOD %s...\"", pattern, InternalPrefix))
	}
	r.Method, r.Path = method, path
	return r
}

// InternalPrefix is where every internal route lives.
const InternalPrefix = "/internal/"

// Pattern is the route as a net/http ServeMux pattern.
func (r Internal) Pattern() string { return r.Method + " " + r.Path }

// SuccessStatus is the route's success status.
func (r Internal) SuccessStatus() int {
	if r.Status == 0 {
		return http.StatusOK
	}
	return r.Status
}

// Served are the declarations of routes that service serves, in order.
func Served(service string, routes []Internal) []Internal {
	var out []Internal
	for _, r := range routes {
		if r.Service == service {
			out = append(out, r)
		}
	}
	return out
}

// Data is the answer of most internal routes, {"data": T}: the record
// without the public envelope's success and message.
type Data[T any] struct {
	Data T `json:"data"`
}

// DataList is {"data": [T...]}. It is a type of its own rather than
// Data[[]T] because the document generator names a schema after the Go
// type's name without package paths and brackets, which spells a slice
// type argument badly (Data[[]Contact] would not be "ContactDataList").
type DataList[T any] struct {
	Data []T `json:"data"`
}
