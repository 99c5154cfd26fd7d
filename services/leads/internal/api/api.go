// Package api is the leads service's HTTP surface: the public /leads routes
// (JWT, admin where the spec says so) and the /internal/leads routes other
// contexts call with the cluster secret.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/bulk/bulkhttp"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
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
	guards := httpx.Guards{
		route.JWT:   jwt,
		route.Admin: func(next http.Handler) http.Handler { return jwt(auth.RequireAdmin(next)) },
	}
	// Internal calls act for the caller the calling context names.
	internal := history.Internal(auth.RequireInternal(cfg.InternalSecret))

	mount := func(r route.Route, h httpx.HandlerFunc) { guards.Mount(mux, r, h) }
	// Writes to a lead follow the caller's edit scope (403 outside).
	writable := directory.RequireWrite(cfg.Service.Owner, cfg.Service.CanWrite)
	mountWrite := func(r route.Route, h httpx.HandlerFunc) { guards.Mount(mux, r, writable(h)) }
	mount(leadsapi.ListLeads, h.list)
	mount(leadsapi.CreateLead, h.create)
	mount(leadsapi.GetLead, bulkhttp.ByIDProperty(h.getByID, h.svc.GetBy))
	mountWrite(leadsapi.UpdateLead, h.update)
	mountWrite(leadsapi.DeleteLead, h.delete)
	mountWrite(leadsapi.QualifyLead, h.qualify)
	mountWrite(leadsapi.DisqualifyLead, h.disqualify)
	// A lead's history is as visible as the lead: its GET's rule (any
	// caller the route lets in; 404 for a lead that is not there).
	mount(leadsapi.LeadHistory, history.Handler(cfg.DB, "lead", func(ctx context.Context, id int64) error {
		_, err := cfg.Service.Get(ctx, id)
		return err
	}))
	mount(historyapi.Admin, history.AdminHandler(cfg.DB, "lead"))
	// Batches are keyed per caller and created by the caller.
	bulkhttp.Mount(mux, guards, leadsapi.LeadBatch, bulkhttp.Ops[leads.Lead, leads.Input, leads.UpdateInput]{
		Create: bulkhttp.Owned(cfg.Service.BatchCreate), Update: cfg.Service.BatchUpdate, Upsert: bulkhttp.OwnedUpsert(cfg.Service.BatchUpsert),
		Read: cfg.Service.BatchRead, Delete: cfg.Service.BatchDelete,
	})
	mount(leadsapi.MatchCompany, h.matchCompany)
	mount(leadsapi.MatchContact, h.matchContact)
	if cfg.CSV != nil {
		mount(leadsapi.GetLeadTemplate, cfg.CSV.Template)
		mount(leadsapi.ExportLeads, cfg.CSV.Export)
		mount(leadsapi.ImportLeads, cfg.CSV.Import)
	}

	acts, err := activity.New(activity.Config{
		DB: cfg.DB, ParentType: activity.Lead, ParentName: "lead",
		ParentExists: func(ctx context.Context, id int64) error {
			_, err := cfg.Service.Get(ctx, id)
			return err
		},
		UserExists: cfg.Service.UserExists, ParentWritable: cfg.Service.Writable,
		References: cfg.TaskReferences,
	})
	if err != nil {
		return nil, err
	}
	acts.Mount(mux, leadsapi.LeadActivity, guards)
	properties := customfield.Store{DB: cfg.DB, Stream: leads.Stream}
	propertyhttp.Mount(mux, guards, leadsapi.LeadProperties, properties, leads.Object)
	propertyhttp.MountInternal(mux, internal, properties, leads.Object)

	mux.Handle(leadsapi.RouteCreateLead, internal(httpx.HandlerFunc(h.internalCreate)))
	mux.Handle(leadsapi.RouteBatch, internal(httpx.HandlerFunc(h.internalCreateBatch)))
	mux.Handle(leadsapi.RouteLead, internal(httpx.HandlerFunc(h.getByID)))
	// Contacts' merges move leads to the surviving contact or company.
	mergehttp.Mount(mux, internal, cfg.Service.Move)
	// Intake's question: which record a submitted address repeats.
	mux.Handle(leadsapi.RouteDuplicates, internal(httpx.HandlerFunc(h.duplicates)))
	// A person's export and erasure (privacy.go).
	if err := mountPrivacy(mux, internal, cfg.DB, cfg.Service); err != nil {
		return nil, err
	}
	return httpx.Routes(mux), nil
}

func caller(r *http.Request) *int64 {
	if c := auth.FromContext(r.Context()); c != nil {
		id := c.UserID()
		return &id
	}
	return nil
}

// parseFilter reads every query parameter of the lead list and the CSV
// export, custom-field filters and sorts against defs; bad ones are one
// 422.
func parseFilter(values url.Values, callerID int64, defs []customfield.Definition) (leads.Filter, error) {
	p := listparam.Parse(values, listparam.Options{Sorts: leads.SortKeys, DefaultSort: leads.DefaultSort, Sync: true,
		CustomFields: true, Definitions: defs})
	f := leads.Filter{CallerID: callerID}
	f.Status = p.Enum("status", leads.Statuses...)
	f.Source = p.String("source")
	f.AssignedTo = p.Int64("assigned_to")
	f.Query = p.Query()
	f.Custom = p.Custom()
	return f, p.Err()
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	defs, err := h.svc.Definitions(r.Context())
	if err != nil {
		return err
	}
	f, err := parseFilter(r.URL.Query(), *caller(r), defs)
	if err != nil {
		return err
	}
	items, total, err := h.svc.List(r.Context(), f)
	if err != nil {
		return err
	}
	httpx.JSON(w, http.StatusOK, envelope.NewPage(items, f.Query, total))
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
	w.Header().Set("Location", leadsapi.GetLead.Location(l.ID))
	httpx.Created(w, l, leadsapi.CreateLead.Message)
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
	httpx.Updated(w, l, leadsapi.UpdateLead.Message)
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
	httpx.Deleted(w, leadsapi.DeleteLead.Message)
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
	var body leadsapi.QualifyInput
	if err := decodeOptional(w, r, &body); err != nil {
		return err
	}
	in, err := qualifyInput(body)
	if err != nil {
		return err
	}
	q, err := h.svc.Qualify(r.Context(), id, in)
	if err != nil {
		return err
	}
	httpx.JSON(w, http.StatusOK, leadsapi.Qualified{
		Success: true, Message: leadsapi.QualifyLead.Message,
		ContactID: q.ContactID, CompanyID: q.CompanyID, DealID: q.DealID, Data: q.Lead,
	})
	return nil
}

func (h *handlers) disqualify(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	var in leadsapi.DisqualifyInput
	if err := decodeOptional(w, r, &in); err != nil {
		return err
	}
	l, err := h.svc.Disqualify(r.Context(), id, in.Reason)
	if err != nil {
		return err
	}
	httpx.Updated(w, l, leadsapi.DisqualifyLead.Message)
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
// the item (left out of a 201 when the request asks for id_only), id the
// lead of a 201. Items fail alone; only a malformed batch fails the
// request.
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
		data[i] = leadsapi.BatchResult{Status: http.StatusCreated, ID: o.Value.ID, Replayed: o.Replayed}
		if !req.IDOnly {
			if data[i].Body, err = createdBody(o.Value); err != nil {
				return err
			}
		}
	}
	httpx.OK(w, data)
	return nil
}

// getByID reads a lead by the path's id: the public GET without id_property,
// and the internal one.
func (h *handlers) getByID(w http.ResponseWriter, r *http.Request) error {
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
