// Package api is the contracts context's HTTP interface: contract
// templates and the merge-tag catalogue (admin), contracts with their
// notes, tasks, documents and signed copies.
package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/contractsapi"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/list/listparam"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// API serves the routes.
type API struct {
	svc *contracts.Service
}

// New builds the handler on the declarations of contractsapi: every route
// requires a valid JWT; template routes and deleting a signed copy also
// require the admin role. Replacing a signed copy and deleting a contract
// that has one are open to every user by route but admin-only in fact:
// the service decides (403) on the locked contract, since only then is it
// known whether a copy exists. Record history (contracts' and templates')
// is read from d. A Privacy, when given, serves contracts' part of privacy
// requests on the internal routes.
func New(svc *contracts.Service, verifier *auth.Verifier, act *activity.Handlers, d db.Querier, internal ...Privacy) (http.Handler, error) {
	if svc == nil || verifier == nil || act == nil || d == nil {
		return nil, errors.New("api: service, verifier, activity handlers and database are required")
	}
	a := &API{svc: svc}
	mux := http.NewServeMux()
	guards := httpx.Guards{
		route.JWT:   verifier.Require,
		route.Admin: func(h http.Handler) http.Handler { return verifier.Require(auth.RequireAdmin(h)) },
	}
	// Writes to a contract follow the caller's edit scope (403 outside).
	writable := directory.RequireWrite(svc.ContractOwner, svc.CanWrite)
	for _, m := range []struct {
		route   route.Route
		handler http.Handler
	}{
		{contractsapi.ListTemplates, httpx.HandlerFunc(a.listTemplates)},
		{contractsapi.CreateTemplate, httpx.HandlerFunc(a.createTemplate)},
		{contractsapi.ListMergeTags, httpx.HandlerFunc(a.tags)},
		{contractsapi.GetMergeTagsPDF, httpx.HandlerFunc(a.tagsPDF)},
		{contractsapi.GetTemplate, httpx.HandlerFunc(a.getTemplate)},
		{contractsapi.UpdateTemplate, httpx.HandlerFunc(a.updateTemplate)},
		{contractsapi.DeleteTemplate, httpx.HandlerFunc(a.deleteTemplate)},

		{contractsapi.ListContracts, httpx.HandlerFunc(a.listContracts)},
		{contractsapi.CreateContract, httpx.HandlerFunc(a.createContract)},
		{contractsapi.GetContract, httpx.HandlerFunc(a.getContract)},
		{contractsapi.UpdateContract, writable(httpx.HandlerFunc(a.updateContract))},
		{contractsapi.DeleteContract, writable(httpx.HandlerFunc(a.deleteContract))},
		{contractsapi.RegenerateContract, writable(httpx.HandlerFunc(a.regenerate))},
		{contractsapi.GetContractPDF, a.document(renderq.PDF)},
		{contractsapi.GetContractDOCX, a.document(renderq.DOCX)},
		{contractsapi.UploadExecuted, writable(httpx.HandlerFunc(a.uploadExecuted))},
		{contractsapi.GetExecuted, httpx.HandlerFunc(a.downloadExecuted)},
		{contractsapi.DeleteExecuted, httpx.HandlerFunc(a.deleteExecuted)},

		// A contract's history is as visible as the contract: its GET's
		// answer (any signed-in caller; 404 for none).
		{contractsapi.ContractHistory, history.Handler(d, "contract", func(ctx context.Context, id int64) error {
			_, err := svc.GetContract(ctx, id)
			return err
		})},
		// Any contract's or template's history, deleted ones' too (admin;
		// the gateway sends object=contract and object=template here).
		{historyapi.Admin, history.AdminHandler(d, "contract", "template")},
	} {
		guards.Mount(mux, m.route, m.handler)
	}
	act.Mount(mux, contractsapi.ContractActivity, guards)
	if err := mountPrivacy(mux, internal); err != nil {
		return nil, err
	}

	return httpx.Routes(mux), nil
}

// created answers a 201 with the record and rt's message, at the URL of
// the record's GET route (location).
func created(w http.ResponseWriter, rt route.Route, location string, v any) {
	w.Header().Set("Location", location)
	httpx.Created(w, v, rt.Message)
}

func callerID(r *http.Request) *int64 {
	if c := auth.FromContext(r.Context()); c != nil {
		id := c.UserID()
		return &id
	}
	return nil
}

// ---- templates ----

func (a *API) listTemplates(w http.ResponseWriter, r *http.Request) error {
	list, err := a.svc.ListTemplates(r.Context())
	if err != nil {
		return err
	}
	httpx.OK(w, list)
	return nil
}

func (a *API) createTemplate(w http.ResponseWriter, r *http.Request) error {
	var in contracts.TemplateInput
	if err := httpx.Decode(w, r, &in, 2*httpx.MaxJSONBody); err != nil {
		return err
	}
	t, err := a.svc.CreateTemplate(r.Context(), in, callerID(r))
	if err != nil {
		return err
	}
	created(w, contractsapi.CreateTemplate, contractsapi.GetTemplate.Location(t.ID), t)
	return nil
}

func (a *API) templateID(r *http.Request) (int64, error) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return 0, problem.NotFound("template")
	}
	return id, nil
}

func (a *API) getTemplate(w http.ResponseWriter, r *http.Request) error {
	id, err := a.templateID(r)
	if err != nil {
		return err
	}
	t, err := a.svc.GetTemplate(r.Context(), id)
	if err != nil {
		return err
	}
	httpx.OK(w, t)
	return nil
}

func (a *API) updateTemplate(w http.ResponseWriter, r *http.Request) error {
	id, err := a.templateID(r)
	if err != nil {
		return err
	}
	// A PUT keeps the name and content it leaves out: the body is decoded
	// over the current ones (the service takes a whole template body).
	cur, err := a.svc.GetTemplate(r.Context(), id)
	if err != nil {
		return err
	}
	in := contracts.TemplateInput{Name: cur.Name, Content: cur.Content}
	if err := httpx.Decode(w, r, &in, 2*httpx.MaxJSONBody); err != nil {
		return err
	}
	t, err := a.svc.UpdateTemplate(r.Context(), id, in)
	if err != nil {
		return err
	}
	httpx.Updated(w, t, contractsapi.UpdateTemplate.Message)
	return nil
}

func (a *API) deleteTemplate(w http.ResponseWriter, r *http.Request) error {
	id, err := a.templateID(r)
	if err != nil {
		return err
	}
	if err := a.svc.DeleteTemplate(r.Context(), id); err != nil {
		return err
	}
	httpx.Deleted(w, contractsapi.DeleteTemplate.Message)
	return nil
}

func (a *API) tags(w http.ResponseWriter, r *http.Request) error {
	httpx.OK(w, a.svc.Catalogue().Grouped())
	return nil
}

func (a *API) tagsPDF(w http.ResponseWriter, r *http.Request) error {
	data, err := a.svc.RenderCatalogue(r.Context(), renderUser(r))
	if err != nil {
		return err
	}
	writeFile(w, renderq.PDF.ContentType(), `attachment; filename="contract-merge-tags.pdf"`, data)
	return nil
}

// ---- contracts ----

func (a *API) contractID(r *http.Request) (int64, error) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return 0, problem.NotFound("contract")
	}
	return id, nil
}

func (a *API) listContracts(w http.ResponseWriter, r *http.Request) error {
	f, err := listFilter(r.URL.Query())
	if err != nil {
		return err
	}
	items, total, err := a.svc.ListContracts(r.Context(), f)
	if err != nil {
		return err
	}
	records := make([]contractsapi.Contract, len(items))
	for i, c := range items {
		records[i] = c.Contract
	}
	httpx.JSON(w, http.StatusOK, envelope.NewPage(records, f.Query, total))
	return nil
}

// listFilter reads the contract list's query string; every bad parameter
// is named in one 422.
func listFilter(values url.Values) (contracts.ListFilter, error) {
	p := listparam.Parse(values, listparam.Options{
		Sorts: contracts.ContractSorts, DefaultSort: contracts.DefaultContractSort, Sync: true,
	})
	f := contracts.ListFilter{
		Statuses: p.EnumList("status", contracts.Statuses...),
		DealID:   p.Int64("deal_id"),
	}
	f.Query = p.Query()
	var errs []problem.FieldError
	if err := p.Err(); err != nil {
		errs = append(errs, problem.From(err).Errors...)
	}
	if v := strings.TrimSpace(values.Get("expiring_within")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > contracts.MaxExpiringWithin {
			errs = append(errs, problem.FieldError{Field: "expiring_within",
				Message: fmt.Sprintf("must be a number of days between 0 and %d", contracts.MaxExpiringWithin)})
		} else {
			f.ExpiringWithin = &n
		}
	}
	if len(errs) > 0 {
		return contracts.ListFilter{}, problem.Validation(errs...)
	}
	return f, nil
}

func (a *API) createContract(w http.ResponseWriter, r *http.Request) error {
	var in contracts.ContractInput
	if err := httpx.Decode(w, r, &in, 2*httpx.MaxJSONBody); err != nil {
		return err
	}
	c, err := a.svc.CreateContract(r.Context(), in, callerID(r))
	if err != nil {
		return err
	}
	created(w, contractsapi.CreateContract, contractsapi.GetContract.Location(c.ID), c.Contract)
	return nil
}

func (a *API) getContract(w http.ResponseWriter, r *http.Request) error {
	id, err := a.contractID(r)
	if err != nil {
		return err
	}
	c, err := a.svc.GetContract(r.Context(), id)
	if err != nil {
		return err
	}
	httpx.OK(w, c.Contract)
	return nil
}

func (a *API) updateContract(w http.ResponseWriter, r *http.Request) error {
	id, err := a.contractID(r)
	if err != nil {
		return err
	}
	var in contracts.ContractInput
	if err := httpx.Decode(w, r, &in, 2*httpx.MaxJSONBody); err != nil {
		return err
	}
	c, err := a.svc.UpdateContract(r.Context(), id, in)
	if err != nil {
		return err
	}
	httpx.Updated(w, c.Contract, contractsapi.UpdateContract.Message)
	return nil
}

func (a *API) deleteContract(w http.ResponseWriter, r *http.Request) error {
	id, err := a.contractID(r)
	if err != nil {
		return err
	}
	if err := a.svc.DeleteContract(r.Context(), id); err != nil {
		return err
	}
	httpx.Deleted(w, contractsapi.DeleteContract.Message)
	return nil
}

func (a *API) regenerate(w http.ResponseWriter, r *http.Request) error {
	id, err := a.contractID(r)
	if err != nil {
		return err
	}
	c, err := a.svc.Regenerate(r.Context(), id)
	if err != nil {
		return err
	}
	httpx.Updated(w, c.Contract, contractsapi.RegenerateContract.Message)
	return nil
}

func (a *API) document(format renderq.Format) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := a.contractID(r)
		if err != nil {
			return err
		}
		data, c, err := a.svc.Render(r.Context(), id, format, renderUser(r))
		if err != nil {
			return err
		}
		// Contract numbers are letters, digits, '-' and '_' only (the
		// template prefix is validated), so the name needs no escaping.
		writeFile(w, format.ContentType(), `attachment; filename="`+c.ContractNumber+`.`+string(format)+`"`, data)
		return nil
	}
}

// renderUser keys the per-user limit of renders in flight: the caller's
// user id (every render route requires a token).
func renderUser(r *http.Request) string {
	if id := callerID(r); id != nil {
		return "user:" + strconv.FormatInt(*id, 10)
	}
	return ""
}

func writeFile(w http.ResponseWriter, contentType, disposition string, data []byte) {
	startFile(w, contentType, disposition, int64(len(data)))
	_, _ = w.Write(data)
}

// startFile writes the 200 and the headers of a file download.
func startFile(w http.ResponseWriter, contentType, disposition string, size int64) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Disposition", disposition)
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private, no-store")
	w.WriteHeader(http.StatusOK)
}

// uploadExecuted streams the multipart field "file" into the service
// without buffering the body: a declared length over the limit is refused
// before reading, and MaxBytesReader stops an undeclared one at the limit.
func (a *API) uploadExecuted(w http.ResponseWriter, r *http.Request) error {
	id, err := a.contractID(r)
	if err != nil {
		return err
	}
	// The declared limit is the file's plus room for the multipart framing.
	limit := contractsapi.UploadExecuted.BodyLimit
	if r.ContentLength > limit {
		return problem.TooLarge("the file exceeds 25 MB")
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return problem.UnsupportedMediaType("Content-Type must be multipart/form-data with a field named file")
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	mr, err := r.MultipartReader()
	if err != nil {
		return problem.Invalid("file", "is required")
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return problem.Invalid("file", "is required")
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return problem.TooLarge("the file exceeds 25 MB")
			}
			return problem.Invalid("file", "the multipart body is malformed")
		}
		if part.FormName() != "file" {
			_, _ = io.Copy(io.Discard, part)
			_ = part.Close()
			continue
		}
		c, err := a.svc.UploadExecuted(r.Context(), id, part.FileName(), bodyLimited{part}, callerID(r))
		_ = part.Close()
		if err != nil {
			return err
		}
		created(w, contractsapi.UploadExecuted, contractsapi.GetExecuted.Location(c.ID), c.Contract)
		return nil
	}
}

func (a *API) downloadExecuted(w http.ResponseWriter, r *http.Request) error {
	id, err := a.contractID(r)
	if err != nil {
		return err
	}
	started := false
	err = a.svc.StreamExecuted(r.Context(), id, func(f contracts.ExecutedFile) (io.Writer, error) {
		startFile(w, renderq.PDF.ContentType(), contracts.ContentDisposition(f.Filename), f.Size)
		started = true
		return w, nil
	})
	if err != nil {
		if !started {
			return err
		}
		// Headers are gone; the short body (Content-Length) tells the client.
		slog.ErrorContext(r.Context(), "signed copy download interrupted", "contract_id", id, "error", err.Error())
	}
	return nil
}

func (a *API) deleteExecuted(w http.ResponseWriter, r *http.Request) error {
	id, err := a.contractID(r)
	if err != nil {
		return err
	}
	if _, err := a.svc.DeleteExecuted(r.Context(), id); err != nil {
		return err
	}
	httpx.Deleted(w, contractsapi.DeleteExecuted.Message)
	return nil
}

// bodyLimited tells the core that a read stopped at the body's limit
// (MaxBytesReader's error, an HTTP type) as contracts.ErrBodyTooLarge.
type bodyLimited struct{ r io.Reader }

func (b bodyLimited) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return n, contracts.ErrBodyTooLarge
	}
	return n, err
}
