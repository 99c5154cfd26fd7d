// Package api is the deals HTTP surface: the public routes (JWT, stage
// writes admin-only) and the internal routes other contexts call with the
// cluster secret (idempotent deal creation, the merge read for contracts).
package api

import (
	"errors"
	"net/http"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/listq"
	"github.com/opencrm/crm/services/deals/internal/deals"
)

// Config wires the handlers.
type Config struct {
	Service        *deals.Service
	Verifier       *auth.Verifier
	InternalSecret string
	// ListSpec is the deals list's sort whitelist (from storage).
	ListSpec listq.Spec
}

type handlers struct {
	svc  *deals.Service
	spec listq.Spec
}

// New returns the service's routes; unmatched paths answer problem+json 404.
func New(cfg Config) (http.Handler, error) {
	if cfg.Service == nil || cfg.Verifier == nil {
		return nil, errors.New("api: service and verifier are required")
	}
	if err := auth.CheckInternalSecret(cfg.InternalSecret); err != nil {
		return nil, errors.New("api: internal secret " + err.Error())
	}
	h := &handlers{svc: cfg.Service, spec: cfg.ListSpec}
	mux := http.NewServeMux()
	user := func(pattern string, fn http.HandlerFunc) { mux.Handle(pattern, cfg.Verifier.Require(fn)) }
	admin := func(pattern string, fn http.HandlerFunc) {
		mux.Handle(pattern, cfg.Verifier.Require(auth.RequireAdmin(fn)))
	}
	internal := auth.RequireInternal(cfg.InternalSecret)

	user("GET /deal-stages", h.listStages)
	user("GET /deal-stages/{id}", h.getStage)
	admin("POST /deal-stages", h.createStage)
	admin("PUT /deal-stages/{id}", h.updateStage)
	admin("DELETE /deal-stages/{id}", h.deleteStage)

	user("GET /deals", h.listDeals)
	user("POST /deals", h.createDeal)
	user("GET /deals/{id}", h.getDeal)
	user("PUT /deals/{id}", h.updateDeal)
	user("DELETE /deals/{id}", h.deleteDeal)

	user("GET /deals/{id}/quotes", h.listQuotes)
	user("POST /deals/{id}/quotes", h.createQuote)
	user("GET /quotes/{id}", h.getQuote)
	user("PUT /quotes/{id}", h.updateQuote)
	user("DELETE /quotes/{id}", h.deleteQuote)

	mux.Handle("POST /internal/deals", internal(http.HandlerFunc(h.createInternal)))
	mux.Handle("GET /internal/deals/{id}", internal(http.HandlerFunc(h.getDeal)))
	mux.Handle("GET /internal/deals/{id}/merge", internal(http.HandlerFunc(h.merge)))

	mux.Handle("/", httpx.NotFoundHandler())
	return mux, nil
}

// ---- stages ----

func (h *handlers) listStages(w http.ResponseWriter, r *http.Request) {
	st, err := h.svc.ListStages(r.Context())
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.OK(w, st)
}

func (h *handlers) getStage(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	st, err := h.svc.GetStage(r.Context(), id)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.OK(w, st)
}

func (h *handlers) createStage(w http.ResponseWriter, r *http.Request) {
	var in deals.StageWrite
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		httpx.Error(w, r, err)
		return
	}
	st, err := h.svc.CreateStage(r.Context(), in)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.Created(w, st, "Deal stage created")
}

func (h *handlers) updateStage(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	var in deals.StageWrite
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		httpx.Error(w, r, err)
		return
	}
	st, err := h.svc.UpdateStage(r.Context(), id, in)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.Updated(w, st, "Deal stage updated")
}

func (h *handlers) deleteStage(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if err := h.svc.DeleteStage(r.Context(), id); err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.Deleted(w, "Deal stage deleted")
}

// ---- deals ----

func (h *handlers) listDeals(w http.ResponseWriter, r *http.Request) {
	q := listq.Parse(r.URL.Query(), h.spec)
	f := deals.DealFilter{
		StageID:    q.Int64("stage_id"),
		CompanyID:  q.Int64("company_id"),
		ContactID:  q.Int64("contact_id"),
		AssignedTo: q.Int64("assigned_to"),
		Statuses:   q.EnumList("status", deals.Outcomes...),
	}
	if err := q.Err(); err != nil {
		httpx.Error(w, r, err)
		return
	}
	c := auth.FromContext(r.Context())
	var err error
	if f.AssignedToAny, err = h.svc.ResolveScope(r.Context(), q.Scope, c.UserID(), c.TeamID); err != nil {
		httpx.Error(w, r, err)
		return
	}
	page, err := h.svc.ListDeals(r.Context(), f, q)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.JSON(w, http.StatusOK, page)
}

func (h *handlers) createDeal(w http.ResponseWriter, r *http.Request) {
	var in deals.DealWrite
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		httpx.Error(w, r, err)
		return
	}
	owner := auth.FromContext(r.Context()).UserID()
	d, err := h.svc.CreateDeal(r.Context(), in, &owner)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.Created(w, d, "Deal created")
}

func (h *handlers) getDeal(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	d, err := h.svc.GetDeal(r.Context(), id)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.OK(w, d)
}

func (h *handlers) updateDeal(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	var in deals.DealWrite
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		httpx.Error(w, r, err)
		return
	}
	d, err := h.svc.UpdateDeal(r.Context(), id, in)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.Updated(w, d, "Deal updated")
}

func (h *handlers) deleteDeal(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if err := h.svc.DeleteDeal(r.Context(), id); err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.Deleted(w, "Deal deleted")
}

// ---- quotes ----

func (h *handlers) listQuotes(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	qs, err := h.svc.ListQuotes(r.Context(), id)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.OK(w, qs)
}

func (h *handlers) createQuote(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	var in deals.QuoteWrite
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		httpx.Error(w, r, err)
		return
	}
	q, err := h.svc.CreateQuote(r.Context(), id, in)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.Created(w, q, "Quote created")
}

func (h *handlers) getQuote(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	q, err := h.svc.GetQuote(r.Context(), id)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.OK(w, q)
}

func (h *handlers) updateQuote(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	var in deals.QuoteWrite
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		httpx.Error(w, r, err)
		return
	}
	q, err := h.svc.UpdateQuote(r.Context(), id, in)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.Updated(w, q, "Quote updated")
}

func (h *handlers) deleteQuote(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if err := h.svc.DeleteQuote(r.Context(), id); err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.Deleted(w, "Quote deleted")
}

// ---- internal ----

// createInternal is POST /internal/deals: the same key and body answer
// with the stored response; the same key with another body is 409.
func (h *handlers) createInternal(w http.ResponseWriter, r *http.Request) {
	key, err := idempotency.Key(r)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	var in deals.DealWrite
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		httpx.Error(w, r, err)
		return
	}
	res, err := h.svc.CreateDealOnce(r.Context(), key, in, func(d deals.Deal) (int, any) {
		return http.StatusCreated, map[string]any{"success": true, "data": d, "message": "Deal created"}
	})
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	idempotency.Write(w, res)
}

func (h *handlers) merge(w http.ResponseWriter, r *http.Request) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	m, err := h.svc.Merge(r.Context(), id)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.OK(w, m)
}
