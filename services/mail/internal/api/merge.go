package api

import (
	"net/http"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/mergeapi/mergehttp"
	"github.com/opencrm/crm/pkg/history"
)

// mountMerges serves mergeapi.RouteMove behind the internal secret, which
// mail's internal routes share (Privacy's); nothing without one. Every
// mover must answer contacts' merge saga, which otherwise keeps retrying
// the step.
func mountMerges(mux *http.ServeMux, d Deps) {
	if d.Privacy == nil || d.Privacy.InternalSecret == "" {
		return
	}
	mergehttp.Mount(mux, history.Internal(auth.RequireInternal(d.Privacy.InternalSecret)), d.Service.Move)
}
