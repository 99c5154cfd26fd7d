package httpx

import (
	"fmt"
	"net/http"

	"github.com/opencrm/crm/pkg/contract/route"
)

// Guards are a service's authentication middleware by route policy: the
// declaration says which one a route needs, so a service mounts a handler
// without repeating the route's path or policy.
type Guards map[route.Auth]func(http.Handler) http.Handler

// Mount registers h on mux at r's pattern behind r's guard. A policy with
// no guard is a wiring mistake and panics at start-up, never at request time.
func (g Guards) Mount(mux *http.ServeMux, r route.Route, h http.Handler) {
	guard, ok := g[r.Auth]
	if !ok {
		panic(fmt.Sprintf("httpx: no guard for %s route %s", r.Auth, r.Pattern()))
	}
	mux.Handle(r.Pattern(), guard(h))
}
