// Package propertyhttp is the edge of custom-field definitions: the
// handlers of the /properties/{object} routes each owning context mounts.
package propertyhttp

import (
	"net/http"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/httpx"
)

// Mount serves the definition routes of obj on mux behind their guards.
func Mount(mux *http.ServeMux, guards httpx.Guards, routes propertyapi.Routes, store customfield.Store, obj customfield.Object) {
	h := handlers{routes: routes, store: store, obj: obj}
	handle := func(rt route.Route, fn func(w http.ResponseWriter, r *http.Request) error) {
		guards.Mount(mux, rt, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := fn(w, r); err != nil {
				httpx.Error(w, r, err)
			}
		}))
	}
	handle(routes.List, h.list)
	handle(routes.Create, h.create)
	handle(routes.Get, h.get)
	handle(routes.Update, h.update)
	handle(routes.Delete, h.delete)
}

type handlers struct {
	routes propertyapi.Routes
	store  customfield.Store
	obj    customfield.Object
}

func (h handlers) list(w http.ResponseWriter, r *http.Request) error {
	defs, err := h.store.List(r.Context(), h.obj.Name)
	if err != nil {
		return err
	}
	httpx.OK(w, defs)
	return nil
}

func (h handlers) create(w http.ResponseWriter, r *http.Request) error {
	var in propertyapi.PropertyInput
	if err := httpx.Decode(w, r, &in, h.routes.Create.Limit()); err != nil {
		return err
	}
	d, err := h.store.Create(r.Context(), h.obj, in)
	if err != nil {
		return err
	}
	w.Header().Set("Location", route.Prefix+h.routes.Create.Path+"/"+d.Name)
	httpx.Created(w, d, h.routes.Create.Message)
	return nil
}

// name is the {name} of the path; a malformed one names no field.
func name(r *http.Request) (string, error) {
	n := r.PathValue("name")
	if !customfield.ValidName(n) {
		return "", fault.NotFound("custom field")
	}
	return n, nil
}

func (h handlers) get(w http.ResponseWriter, r *http.Request) error {
	n, err := name(r)
	if err != nil {
		return err
	}
	d, err := h.store.Get(r.Context(), h.obj.Name, n)
	if err != nil {
		return err
	}
	httpx.OK(w, d)
	return nil
}

func (h handlers) update(w http.ResponseWriter, r *http.Request) error {
	n, err := name(r)
	if err != nil {
		return err
	}
	var in propertyapi.PropertyUpdate
	if err := httpx.Decode(w, r, &in, h.routes.Update.Limit()); err != nil {
		return err
	}
	d, err := h.store.Update(r.Context(), h.obj, n, in)
	if err != nil {
		return err
	}
	httpx.Updated(w, d, h.routes.Update.Message)
	return nil
}

func (h handlers) delete(w http.ResponseWriter, r *http.Request) error {
	n, err := name(r)
	if err != nil {
		return err
	}
	if err := h.store.Delete(r.Context(), h.obj, n); err != nil {
		return err
	}
	httpx.Deleted(w, h.routes.Delete.Message)
	return nil
}

// MountInternal serves GET /internal/properties/{object} for each of
// objs behind the internal guard: the definitions as {"data":[...]}.
func MountInternal(mux *http.ServeMux, internal func(http.Handler) http.Handler, store customfield.Store, objs ...customfield.Object) {
	for _, o := range objs {
		mux.Handle(propertyapi.RouteInternal(o.Name), internal(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defs, err := store.List(r.Context(), o.Name)
			if err != nil {
				httpx.Error(w, r, err)
				return
			}
			httpx.JSON(w, http.StatusOK, propertyapi.Definitions{Data: defs})
		})))
	}
}
