// Package api is the deals HTTP surface: the public routes (JWT, stage
// writes admin-only) and the internal routes other contexts call with the
// cluster secret (idempotent deal creation, the merge read for contracts).
package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/list/listparam"
	"github.com/opencrm/crm/services/deals/internal/deals"
)

// Config wires the handlers.
type Config struct {
	Service        *deals.Service
	Verifier       *auth.Verifier
	InternalSecret string
}

type handlers struct {
	svc *deals.Service
}

// New returns the service's routes; unmatched paths answer problem+json 404.
func New(cfg Config) (http.Handler, error) {
	if cfg.Service == nil || cfg.Verifier == nil {
		return nil, errors.New("api: service and verifier are required")
	}
	if err := auth.CheckInternalSecret(cfg.InternalSecret); err != nil {
		return nil, errors.New("api: internal secret " + err.Error())
	}
	h := &handlers{svc: cfg.Service}
	mux := http.NewServeMux()
	user := func(pattern string, fn httpx.HandlerFunc) { mux.Handle(pattern, cfg.Verifier.Require(fn)) }
	admin := func(pattern string, fn httpx.HandlerFunc) {
		mux.Handle(pattern, cfg.Verifier.Require(auth.RequireAdmin(fn)))
	}
	internal := auth.RequireInternal(cfg.InternalSecret)

	user("GET /deal-stages", h.listStages)
	user("GET /deal-stages/{id}", read(h.svc.GetStage))
	admin("POST /deal-stages", h.createStage)
	admin("PUT /deal-stages/{id}", write(h.svc.UpdateStage, httpx.Updated, "Deal stage updated"))
	admin("DELETE /deal-stages/{id}", remove(h.svc.DeleteStage, "Deal stage deleted"))

	user("GET /deals", h.listDeals)
	user("POST /deals", h.createDeal)
	user("GET /deals/{id}", read(h.svc.GetDeal))
	// Writes to a deal, and to its quotes, follow the caller's edit scope
	// (403 outside).
	deal := func(pattern string, fn httpx.HandlerFunc) {
		mux.Handle(pattern, cfg.Verifier.Require(directory.RequireWrite(h.svc.DealOwner, h.svc.CanWrite)(fn)))
	}
	quote := func(pattern string, fn httpx.HandlerFunc) {
		mux.Handle(pattern, cfg.Verifier.Require(directory.RequireWrite(h.svc.QuoteOwner, h.svc.CanWrite)(fn)))
	}
	deal("PUT /deals/{id}", write(h.svc.UpdateDeal, httpx.Updated, "Deal updated"))
	deal("DELETE /deals/{id}", remove(h.svc.DeleteDeal, "Deal deleted"))

	user("GET /deals/{id}/quotes", read(h.svc.ListQuotes))
	deal("POST /deals/{id}/quotes", write(h.svc.CreateQuote, httpx.Created, "Quote created"))
	user("GET /quotes/{id}", read(h.svc.GetQuote))
	quote("PUT /quotes/{id}", write(h.svc.UpdateQuote, httpx.Updated, "Quote updated"))
	quote("DELETE /quotes/{id}", remove(h.svc.DeleteQuote, "Quote deleted"))

	mux.Handle(dealsapi.RouteCreateDeal, internal(httpx.HandlerFunc(h.createInternal)))
	mux.Handle(dealsapi.RouteStage, internal(read(h.svc.GetStage)))
	mux.Handle(dealsapi.RouteDeal, internal(read(h.svc.GetDeal)))
	mux.Handle(dealsapi.RouteMerge, internal(read(h.svc.Merge)))

	return httpx.Routes(mux), nil
}

// ---- handlers of one path {id} ----

// read answers 200 with what get returns for the path's {id}.
func read[T any](get func(context.Context, int64) (T, error)) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := httpx.PathID(r, "id")
		if err != nil {
			return err
		}
		v, err := get(r.Context(), id)
		if err != nil {
			return err
		}
		httpx.OK(w, v)
		return nil
	}
}

// write decodes the JSON body, applies fn to the path's {id} and answers
// with reply (httpx.Created or httpx.Updated) and msg.
func write[In, T any](fn func(context.Context, int64, In) (T, error), reply func(http.ResponseWriter, any, string), msg string) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := httpx.PathID(r, "id")
		if err != nil {
			return err
		}
		var in In
		if err := httpx.Decode(w, r, &in, 0); err != nil {
			return err
		}
		v, err := fn(r.Context(), id, in)
		if err != nil {
			return err
		}
		reply(w, v, msg)
		return nil
	}
}

// remove deletes the path's {id} and answers with msg.
func remove(del func(context.Context, int64) error, msg string) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := httpx.PathID(r, "id")
		if err != nil {
			return err
		}
		if err := del(r.Context(), id); err != nil {
			return err
		}
		httpx.Deleted(w, msg)
		return nil
	}
}

// ---- stages ----

func (h *handlers) listStages(w http.ResponseWriter, r *http.Request) error {
	st, err := h.svc.ListStages(r.Context())
	if err != nil {
		return err
	}
	httpx.OK(w, st)
	return nil
}

func (h *handlers) createStage(w http.ResponseWriter, r *http.Request) error {
	var in deals.StageWrite
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		return err
	}
	st, err := h.svc.CreateStage(r.Context(), in)
	if err != nil {
		return err
	}
	httpx.Created(w, st, "Deal stage created")
	return nil
}

// ---- deals ----

// dealList is what the deals list reads besides the common parameters.
var dealList = listparam.Options{Sorts: deals.DealSorts, DefaultSort: deals.DefaultDealSort, Sync: true}

func (h *handlers) listDeals(w http.ResponseWriter, r *http.Request) error {
	p := listparam.Parse(r.URL.Query(), dealList)
	f := deals.DealFilter{
		StageID:    p.Int64("stage_id"),
		CompanyID:  p.Int64("company_id"),
		ContactID:  p.Int64("contact_id"),
		AssignedTo: p.Int64("assigned_to"),
		Statuses:   p.EnumList("status", deals.Outcomes...),
	}
	if err := p.Err(); err != nil {
		return err
	}
	f.Query = p.Query()
	c := auth.FromContext(r.Context())
	var err error
	if f.AssignedToAny, err = h.svc.ResolveScope(r.Context(), f.Scope, c.UserID(), c.TeamID); err != nil {
		return err
	}
	items, total, err := h.svc.ListDeals(r.Context(), f)
	if err != nil {
		return err
	}
	httpx.JSON(w, http.StatusOK, envelope.NewPage(items, f.Query, total))
	return nil
}

func (h *handlers) createDeal(w http.ResponseWriter, r *http.Request) error {
	var in deals.DealWrite
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		return err
	}
	owner := auth.FromContext(r.Context()).UserID()
	d, err := h.svc.CreateDeal(r.Context(), in, &owner)
	if err != nil {
		return err
	}
	httpx.Created(w, d, "Deal created")
	return nil
}

// ---- internal ----

// createInternal is POST /internal/deals: the same key and body answer
// with the deal the first request created (marked replayed); the same key
// with another body is 409.
func (h *handlers) createInternal(w http.ResponseWriter, r *http.Request) error {
	key, err := idempotency.Key(r)
	if err != nil {
		return err
	}
	var in deals.DealWrite
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		return err
	}
	done, err := h.svc.CreateDealOnce(r.Context(), key, in)
	if err != nil {
		return err
	}
	idempotency.MarkReplayed(w, done.Replayed)
	httpx.Created(w, done.Value, "Deal created")
	return nil
}
