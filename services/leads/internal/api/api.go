// Package api is the leads service's HTTP surface: the public /leads routes
// (JWT, admin where the spec says so) and the /internal/leads routes other
// contexts call with the cluster secret.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/listq"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

// Config wires the handlers.
type Config struct {
	Service        *leads.Service
	DB             *db.DB
	Verifier       *auth.Verifier
	InternalSecret string
	// CSV serves template, export and import; nil leaves them unrouted.
	CSV CSV
	// TaskReferences checks the contact, company and deal a task names.
	TaskReferences activity.References
}

// CSV is the lead CSV surface (template, export, import).
type CSV interface {
	Template(w http.ResponseWriter, r *http.Request) error
	Export(w http.ResponseWriter, r *http.Request) error
	Import(w http.ResponseWriter, r *http.Request) error
}

type handlers struct{ svc *leads.Service }

// New returns the service's router.
func New(cfg Config) (http.Handler, error) {
	if cfg.Service == nil || cfg.DB == nil || cfg.Verifier == nil {
		return nil, errors.New("api: service, db and verifier are required")
	}
	if err := auth.CheckInternalSecret(cfg.InternalSecret); err != nil {
		return nil, errors.New("api: internal secret " + err.Error())
	}
	h := &handlers{svc: cfg.Service}
	mux := http.NewServeMux()
	jwt := cfg.Verifier.Require
	admin := func(next http.Handler) http.Handler { return jwt(auth.RequireAdmin(next)) }
	internal := auth.RequireInternal(cfg.InternalSecret)

	mux.Handle("GET /leads", jwt(httpx.HandlerFunc(h.list)))
	mux.Handle("POST /leads", jwt(httpx.HandlerFunc(h.create)))
	mux.Handle("GET /leads/{id}", jwt(httpx.HandlerFunc(h.get)))
	// Writes to a lead follow the caller's edit scope (403 outside).
	store := cfg.Service.Store()
	lead := func(h httpx.HandlerFunc) http.Handler {
		return jwt(directory.RequireWrite(store.Owner, store.CanWrite)(h))
	}
	mux.Handle("PUT /leads/{id}", lead(h.update))
	mux.Handle("DELETE /leads/{id}", lead(h.delete))
	mux.Handle("POST /leads/{id}/qualify", lead(h.qualify))
	mux.Handle("PUT /leads/{id}/disqualify", lead(h.disqualify))
	mux.Handle("GET /leads/match-company", jwt(httpx.HandlerFunc(h.matchCompany)))
	mux.Handle("GET /leads/match-contact", jwt(httpx.HandlerFunc(h.matchContact)))
	if cfg.CSV != nil {
		mux.Handle("GET /leads/template", admin(httpx.HandlerFunc(cfg.CSV.Template)))
		mux.Handle("GET /leads/export", admin(httpx.HandlerFunc(cfg.CSV.Export)))
		mux.Handle("POST /leads/import", jwt(httpx.HandlerFunc(cfg.CSV.Import)))
	}

	acts, err := activity.New(activity.Config{
		DB: cfg.DB, ParentType: activity.Lead, ParentName: "lead",
		ParentExists: func(ctx context.Context, id int64) error {
			_, err := cfg.Service.Get(ctx, id)
			return err
		},
		UserExists: cfg.Service.Store().UserExists, ParentWritable: cfg.Service.Writable,
		References: cfg.TaskReferences,
	})
	if err != nil {
		return nil, err
	}
	acts.Register(mux, "/leads", jwt)

	mux.Handle(leadsapi.RouteCreateLead, internal(httpx.HandlerFunc(h.internalCreate)))
	mux.Handle(leadsapi.RouteBatch, internal(httpx.HandlerFunc(h.internalCreateBatch)))
	mux.Handle(leadsapi.RouteLead, internal(httpx.HandlerFunc(h.internalGet)))
	return httpx.Routes(mux), nil
}

func caller(r *http.Request) *int64 {
	if c := auth.FromContext(r.Context()); c != nil {
		id := c.UserID()
		return &id
	}
	return nil
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	f, err := leads.ParseFilter(r.URL.Query(), *caller(r))
	if err != nil {
		return err
	}
	items, total, err := h.svc.List(r.Context(), f)
	if err != nil {
		return err
	}
	httpx.JSON(w, http.StatusOK, listq.NewPage(items, f.Query, total))
	return nil
}

func (h *handlers) create(w http.ResponseWriter, r *http.Request) error {
	var in leads.Input
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		return err
	}
	l, err := h.svc.Create(r.Context(), in, caller(r))
	if err != nil {
		return err
	}
	httpx.Created(w, l, "Lead created")
	return nil
}

func (h *handlers) get(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	l, err := h.svc.Get(r.Context(), id)
	if err != nil {
		return err
	}
	httpx.OK(w, l)
	return nil
}

func (h *handlers) update(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	var in leads.Input
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		return err
	}
	l, err := h.svc.Update(r.Context(), id, in)
	if err != nil {
		return err
	}
	httpx.Updated(w, l, "Lead updated")
	return nil
}

func (h *handlers) delete(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	if err := h.svc.Delete(r.Context(), id); err != nil {
		return err
	}
	httpx.Deleted(w, "Lead deleted")
	return nil
}

// decodeOptional reads a JSON body that may be omitted entirely.
func decodeOptional(w http.ResponseWriter, r *http.Request, dst any) error {
	if r.ContentLength == 0 {
		return nil
	}
	return httpx.Decode(w, r, dst, 0)
}

func (h *handlers) qualify(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	var in leads.QualifyInput
	if err := decodeOptional(w, r, &in); err != nil {
		return err
	}
	q, err := h.svc.Qualify(r.Context(), id, in)
	if err != nil {
		return err
	}
	httpx.JSON(w, http.StatusOK, map[string]any{
		"success": true, "message": "Lead qualified",
		"contact_id": q.ContactID, "company_id": q.CompanyID, "deal_id": q.DealID, "data": q.Lead,
	})
	return nil
}

func (h *handlers) disqualify(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	var in struct {
		Reason *string `json:"reason"`
	}
	if err := decodeOptional(w, r, &in); err != nil {
		return err
	}
	l, err := h.svc.Disqualify(r.Context(), id, in.Reason)
	if err != nil {
		return err
	}
	httpx.Updated(w, l, "Lead disqualified")
	return nil
}

func (h *handlers) matchCompany(w http.ResponseWriter, r *http.Request) error {
	items, err := h.svc.MatchCompanies(r.Context(), r.URL.Query().Get("company"))
	if err != nil {
		return err
	}
	httpx.OK(w, items)
	return nil
}

func (h *handlers) matchContact(w http.ResponseWriter, r *http.Request) error {
	items, err := h.svc.MatchContacts(r.Context(), r.URL.Query().Get("email"))
	if err != nil {
		return err
	}
	httpx.OK(w, items)
	return nil
}

func (h *handlers) internalCreate(w http.ResponseWriter, r *http.Request) error {
	key, err := idempotency.Key(r)
	if err != nil {
		return err
	}
	var in leads.Input
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		return err
	}
	done, err := h.svc.CreateOnce(r.Context(), key, in)
	if err != nil {
		return err
	}
	body, err := createdBody(done.Value)
	if err != nil {
		return err
	}
	idempotency.MarkReplayed(w, done.Replayed)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(body)
	return nil
}

// createdBody is the internal create's 201 body, the same bytes whether
// the lead is new or replayed, alone or in a batch.
func createdBody(l leads.Lead) (json.RawMessage, error) {
	return json.Marshal(map[string]any{"success": true, "data": l, "message": "Lead created"})
}

// maxBatchBody bounds a batch body: leads.MaxBatch leads, each far below
// the single create's 1 MB limit in practice.
const maxBatchBody = 4 << 20

// internalCreateBatch is POST /internal/leads for up to leads.MaxBatch
// leads, each with its own key: {"items":[{"key":"...","lead":{...}}]} →
// 200 {"success":true,"data":[{"status":201,"id":7,"body":{...}},...]} in
// item order; body is what POST /internal/leads would have answered for
// the item, id the lead of a 201. Items fail alone; only a malformed batch
// fails the request.
func (h *handlers) internalCreateBatch(w http.ResponseWriter, r *http.Request) error {
	var req leadsapi.BatchRequest
	if err := httpx.Decode(w, r, &req, maxBatchBody); err != nil {
		return err
	}
	items := make([]leads.BatchItem, len(req.Items))
	for i, it := range req.Items {
		items[i].Key = it.Key
		items[i].Err = httpx.DecodeBytes(it.Lead, &items[i].Input, 0)
	}
	outs, err := h.svc.CreateManyOnce(r.Context(), items)
	if err != nil {
		return err
	}
	reqID := problem.RequestID(r.Context())
	data := make([]leadsapi.BatchResult, len(outs))
	for i, o := range outs {
		if o.Err != nil {
			p := problem.From(o.Err)
			body, err := json.Marshal(problem.BodyOf(p, reqID))
			if err != nil {
				return err
			}
			data[i] = leadsapi.BatchResult{Status: p.Status, Body: body}
			continue
		}
		body, err := createdBody(o.Value)
		if err != nil {
			return err
		}
		data[i] = leadsapi.BatchResult{Status: http.StatusCreated, ID: o.Value.ID, Body: body, Replayed: o.Replayed}
	}
	httpx.OK(w, data)
	return nil
}

func (h *handlers) internalGet(w http.ResponseWriter, r *http.Request) error {
	return h.get(w, r)
}
