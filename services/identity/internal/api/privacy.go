package api

import (
	"net/http"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

// WithPrivacy serves the privacy requests (privacyapi.Routes) with p.
func (a *API) WithPrivacy(p *identity.Privacy) *API {
	a.privacy = p
	return a
}

// privacyRoutes are the privacy requests' handlers by declaration; none
// without a Privacy.
func (a *API) privacyRoutes() map[*route.Route]httpx.HandlerFunc {
	if a.privacy == nil {
		return nil
	}
	return map[*route.Route]httpx.HandlerFunc{
		&privacyapi.CreateExport:  adminScope(a.createExport),
		&privacyapi.GetExport:     adminScope(a.getExport),
		&privacyapi.CreateErasure: adminScope(a.createErasure),
		&privacyapi.GetErasure:    adminScope(a.getErasure),
	}
}

// errNoAdminScope is the gateway's refusal of an integration token
// without the admin scope.
var errNoAdminScope = fault.New(fault.KindForbidden, "insufficient_scope", "this access token lacks the admin scope")

// adminScope refuses an integration token without the admin scope, as the
// gateway does: a person's data is not left to the gateway's check alone.
func adminScope(next httpx.HandlerFunc) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if c := auth.FromContext(r.Context()); c == nil || !c.Allows(auth.ScopeAdmin) {
			return errNoAdminScope
		}
		return next(w, r)
	}
}

// accepted answers a job's 202 with the job and op's message.
func accepted[T any](w http.ResponseWriter, op route.Route, v T) {
	httpx.JSON(w, http.StatusAccepted, envelope.Record[T]{Success: true, Data: v, Message: op.Message})
}

func (a *API) createExport(w http.ResponseWriter, r *http.Request) error {
	var in privacyapi.ExportRequest
	if err := httpx.Decode(w, r, &in, maxBody); err != nil {
		return err
	}
	e, err := a.privacy.RequestExport(r.Context(), in)
	if err != nil {
		return err
	}
	accepted(w, privacyapi.CreateExport, e)
	return nil
}

func (a *API) getExport(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	e, err := a.privacy.Export(r.Context(), id)
	if err != nil {
		return err
	}
	httpx.OK(w, e)
	return nil
}

func (a *API) createErasure(w http.ResponseWriter, r *http.Request) error {
	var in privacyapi.ErasureRequest
	if err := httpx.Decode(w, r, &in, maxBody); err != nil {
		return err
	}
	e, err := a.privacy.RequestErasure(r.Context(), in)
	if err != nil {
		return err
	}
	accepted(w, privacyapi.CreateErasure, e)
	return nil
}

func (a *API) getErasure(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	e, err := a.privacy.Erasure(r.Context(), id)
	if err != nil {
		return err
	}
	httpx.OK(w, e)
	return nil
}
