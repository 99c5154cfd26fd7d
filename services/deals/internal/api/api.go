// Package api is the deals HTTP edge: the public routes dealsapi declares
// (JWT, stage writes and custom-field definitions admin-only; writes to a
// deal and its quotes within the caller's edit scope, batches checking it
// per deal) and the internal routes other contexts call with the cluster
// secret (idempotent deal creation, the merge read for contracts, the
// definitions of deals for the gateway and leads).
// It decodes bodies into dealsapi's input types and query strings into the
// core's filters, and answers the core's records in their public form
// (dealsapi's, which Public renders: exact amounts as strings and decimal
// literals) and its faults.
package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/bulk/bulkhttp"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/mergeapi/mergehttp"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/customfield/propertyhttp"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/list/listparam"
	"github.com/opencrm/crm/services/deals/internal/deals"
)

// Config wires the handlers.
type Config struct {
	Service  *deals.Service
	Verifier *auth.Verifier
	// Properties keeps the custom-field definitions of deals (their
	// changes go on the deals stream).
	Properties     customfield.Store
	InternalSecret string
	// DB is where the record history of deals and quotes is read.
	DB db.Querier
	// Privacy is deals' part of privacy requests (internal routes).
	Privacy Privacy
}

type handlers struct {
	svc *deals.Service
}

// New returns the service's routes: each public handler is mounted on its
// declaration in dealsapi behind the declaration's policy, the internal
// ones on dealsapi's internal patterns behind the shared secret; unmatched
// paths answer problem+json 404.
func New(cfg Config) (http.Handler, error) {
	if cfg.Service == nil || cfg.Verifier == nil || cfg.Properties.DB == nil || cfg.DB == nil {
		return nil, errors.New("api: service, verifier, properties and database are required")
	}
	if err := auth.CheckInternalSecret(cfg.InternalSecret); err != nil {
		return nil, errors.New("api: internal secret " + err.Error())
	}
	h := &handlers{svc: cfg.Service}
	mux := http.NewServeMux()
	guards := httpx.Guards{
		route.JWT:   cfg.Verifier.Require,
		route.Admin: func(next http.Handler) http.Handler { return cfg.Verifier.Require(auth.RequireAdmin(next)) },
	}
	// Writes to a deal, and to its quotes, follow the caller's edit scope
	// (403 outside).
	dealWrite := directory.RequireWrite(h.svc.DealOwner, h.svc.CanWrite)
	quoteWrite := directory.RequireWrite(h.svc.QuoteOwner, h.svc.CanWrite)
	for _, m := range []struct {
		route   route.Route
		handler http.Handler
	}{
		{dealsapi.ListStages, httpx.HandlerFunc(h.listStages)},
		{dealsapi.GetStage, read(h.svc.GetStage)},
		{dealsapi.CreateStage, httpx.HandlerFunc(h.createStage)},
		{dealsapi.UpdateStage, update(dealsapi.UpdateStage, h.svc.UpdateStage)},
		{dealsapi.DeleteStage, remove(dealsapi.DeleteStage, h.svc.DeleteStage)},

		{dealsapi.ListDeals, httpx.HandlerFunc(h.listDeals)},
		{dealsapi.CreateDeal, httpx.HandlerFunc(h.createDeal)},
		{dealsapi.GetDeal, bulkhttp.ByIDProperty(read(sent(h.svc.GetDeal)), sentBy(h.svc.GetDealBy))},
		{dealsapi.UpdateDeal, dealWrite(update(dealsapi.UpdateDeal, sentAfter(h.svc.UpdateDeal)))},
		{dealsapi.DeleteDeal, dealWrite(remove(dealsapi.DeleteDeal, h.svc.DeleteDeal))},
		// A deal's history (its quotes' included) is as visible as the
		// deal: its GET's answer (any signed-in caller; 404 for none).
		{dealsapi.DealHistory, history.Handler(cfg.DB, "deal", func(ctx context.Context, id int64) error {
			_, err := h.svc.GetDeal(ctx, id)
			return err
		})},
		// Any deal's or quote's history, deleted ones' too (admin; the
		// gateway sends object=deal and object=quote here).
		{historyapi.Admin, history.AdminHandler(cfg.DB, "deal", "quote")},

		{dealsapi.ListQuotes, read(sentAll(h.svc.ListQuotes))},
		{dealsapi.CreateQuote, dealWrite(httpx.HandlerFunc(h.createQuote))},
		{dealsapi.GetQuote, read(sent(h.svc.GetQuote))},
		{dealsapi.UpdateQuote, quoteWrite(update(dealsapi.UpdateQuote, sentAfter(h.svc.UpdateQuote)))},
		{dealsapi.DeleteQuote, quoteWrite(remove(dealsapi.DeleteQuote, h.svc.DeleteQuote))},
	} {
		guards.Mount(mux, m.route, m.handler)
	}
	// Batches are keyed per caller and owned by the caller.
	bulkhttp.Mount(mux, guards, dealsapi.DealBatch, bulkhttp.Ops[dealsapi.Deal, dealsapi.DealInput, dealsapi.DealUpdate]{
		Create: bulkhttp.Owned(h.svc.BatchCreate), Update: h.svc.BatchUpdate, Upsert: bulkhttp.OwnedUpsert(h.svc.BatchUpsert),
		Read: h.svc.BatchRead, Delete: h.svc.BatchDelete,
	})

	// Internal calls act for the caller the calling context names.
	internal := history.Internal(auth.RequireInternal(cfg.InternalSecret))
	propertyhttp.Mount(mux, guards, dealsapi.DealProperties, cfg.Properties, deals.Object)
	// The gateway (the typed document) and leads (what a qualified lead
	// carries to its deal) read the definitions here.
	propertyhttp.MountInternal(mux, internal, cfg.Properties, deals.Object)
	mux.Handle(dealsapi.RouteCreateDeal, internal(httpx.HandlerFunc(h.createInternal)))
	mux.Handle(dealsapi.RouteStage, internal(read(h.svc.GetStage)))
	mux.Handle(dealsapi.RouteDeal, internal(read(sent(h.svc.GetDeal))))
	mux.Handle(dealsapi.RouteMerge, internal(read(h.svc.Merge)))
	// Contacts' merges move deals to the surviving contact or company.
	mergehttp.Mount(mux, internal, h.svc.Move)
	mountPrivacy(mux, internal, cfg.Privacy)

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

// publicRecord is a core record that is sent as its public form (a deal,
// a quote).
type publicRecord[P any] interface{ Public() P }

// public is the public form of each of records.
func public[T publicRecord[P], P any](records []T) []P {
	out := make([]P, len(records))
	for i, r := range records {
		out[i] = r.Public()
	}
	return out
}

// sent answers the public form of what get returns.
func sent[T publicRecord[P], P any](get func(context.Context, int64) (T, error)) func(context.Context, int64) (P, error) {
	return func(ctx context.Context, id int64) (P, error) {
		v, err := get(ctx, id)
		if err != nil {
			var zero P
			return zero, err
		}
		return v.Public(), nil
	}
}

// sentBy answers the public form of the record get finds by a property's
// value.
func sentBy[T publicRecord[P], P any](get func(ctx context.Context, name, value string) (T, error)) func(context.Context, string, string) (P, error) {
	return func(ctx context.Context, name, value string) (P, error) {
		v, err := get(ctx, name, value)
		if err != nil {
			var zero P
			return zero, err
		}
		return v.Public(), nil
	}
}

// sentAll answers the public form of each record get returns.
func sentAll[T publicRecord[P], P any](get func(context.Context, int64) ([]T, error)) func(context.Context, int64) ([]P, error) {
	return func(ctx context.Context, id int64) ([]P, error) {
		v, err := get(ctx, id)
		if err != nil {
			return nil, err
		}
		return public(v), nil
	}
}

// sentAfter answers the public form of the record a write returns.
func sentAfter[In any, T publicRecord[P], P any](write func(context.Context, int64, In) (T, error)) func(context.Context, int64, In) (P, error) {
	return func(ctx context.Context, id int64, in In) (P, error) {
		v, err := write(ctx, id, in)
		if err != nil {
			var zero P
			return zero, err
		}
		return v.Public(), nil
	}
}

// decodeFor reads the path's {id} and the JSON body.
func decodeFor[In any](w http.ResponseWriter, r *http.Request) (int64, In, error) {
	var in In
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return 0, in, err
	}
	err = httpx.Decode(w, r, &in, 0)
	return id, in, err
}

// update applies the JSON body to the path's {id} with fn and answers 200
// with the record and rt's message.
func update[In, T any](rt route.Route, fn func(context.Context, int64, In) (T, error)) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, in, err := decodeFor[In](w, r)
		if err != nil {
			return err
		}
		v, err := fn(r.Context(), id, in)
		if err != nil {
			return err
		}
		httpx.Updated(w, v, rt.Message)
		return nil
	}
}

// remove deletes the path's {id} and answers with rt's message.
func remove(rt route.Route, del func(context.Context, int64) error) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := httpx.PathID(r, "id")
		if err != nil {
			return err
		}
		if err := del(r.Context(), id); err != nil {
			return err
		}
		httpx.Deleted(w, rt.Message)
		return nil
	}
}

// created answers 201 with the new record v and create's message, and
// Location: where the record is read (its route at, filled with id).
func created(w http.ResponseWriter, create, at route.Route, id int64, v any) {
	w.Header().Set("Location", at.Location(id))
	httpx.Created(w, v, create.Message)
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
	var in dealsapi.StageInput
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		return err
	}
	st, err := h.svc.CreateStage(r.Context(), in)
	if err != nil {
		return err
	}
	created(w, dealsapi.CreateStage, dealsapi.GetStage, st.ID, st)
	return nil
}

// ---- deals ----

func (h *handlers) listDeals(w http.ResponseWriter, r *http.Request) error {
	defs, err := h.svc.Definitions(r.Context())
	if err != nil {
		return err
	}
	// Besides the common parameters: deals' own filters and the
	// installation's custom fields (cf[...], sort_by=cf.<name>).
	p := listparam.Parse(r.URL.Query(), listparam.Options{Sorts: deals.DealSorts, DefaultSort: deals.DefaultDealSort,
		Sync: true, CustomFields: true, Definitions: defs})
	f := deals.DealFilter{
		StageID:    p.Int64("stage_id"),
		CompanyID:  p.Int64("company_id"),
		ContactID:  p.Int64("contact_id"),
		AssignedTo: p.Int64("assigned_to"),
		Statuses:   p.EnumList("status", deals.Outcomes...),
		Custom:     p.Custom(),
	}
	if err := p.Err(); err != nil {
		return err
	}
	f.Query = p.Query()
	c := auth.FromContext(r.Context())
	if f.AssignedToAny, err = h.svc.ResolveScope(r.Context(), f.Scope, c.UserID(), c.TeamID); err != nil {
		return err
	}
	items, total, err := h.svc.ListDeals(r.Context(), f)
	if err != nil {
		return err
	}
	httpx.JSON(w, http.StatusOK, envelope.NewPage(public(items), f.Query, total))
	return nil
}

func (h *handlers) createDeal(w http.ResponseWriter, r *http.Request) error {
	var in dealsapi.DealInput
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		return err
	}
	owner := auth.FromContext(r.Context()).UserID()
	d, err := h.svc.CreateDeal(r.Context(), in, &owner)
	if err != nil {
		return err
	}
	created(w, dealsapi.CreateDeal, dealsapi.GetDeal, d.ID, d.Public())
	return nil
}

// ---- quotes ----

func (h *handlers) createQuote(w http.ResponseWriter, r *http.Request) error {
	dealID, in, err := decodeFor[dealsapi.QuoteInput](w, r)
	if err != nil {
		return err
	}
	q, err := h.svc.CreateQuote(r.Context(), dealID, in)
	if err != nil {
		return err
	}
	created(w, dealsapi.CreateQuote, dealsapi.GetQuote, q.ID, q.Public())
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
	var in dealsapi.DealInput
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		return err
	}
	done, err := h.svc.CreateDealOnce(r.Context(), key, in)
	if err != nil {
		return err
	}
	idempotency.MarkReplayed(w, done.Replayed)
	httpx.Created(w, done.Value, dealsapi.CreateDeal.Message)
	return nil
}
