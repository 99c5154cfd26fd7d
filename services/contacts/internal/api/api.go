// Package api is the HTTP edge of the contacts context: the public
// contacts and companies routes, mounted on their declarations in
// pkg/contract/contactsapi (path, policy, message), and the /internal
// routes other contexts call with the cluster secret. It reads requests
// into the domain's typed values and renders its answers and faults.
package api

import (
	"context"
	"errors"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/audit"
	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/bulk/bulkhttp"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/csvx"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/list/listparam"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// Config wires the API.
type Config struct {
	Service *contacts.Service
	// DB holds the notes and tasks tables (pkg/activity).
	DB       *db.DB
	Verifier *auth.Verifier
	// InternalSecret guards /internal routes.
	InternalSecret string
	// Now is the clock for export file names; time.Now when nil.
	Now func() time.Time
	// Deals checks the deal a contact's task names (the deals context
	// owns deals); nil skips the check.
	Deals Deals
	// Merger serves duplicates and merges, and turns a merged id's 404
	// into code merged; nil leaves them out.
	Merger *contacts.Merger
}

// Deals is what the contacts edge asks the deals context: whether a deal
// exists. dealsapi.Client and dealsapitest's fake satisfy it.
type Deals interface {
	DealExists(ctx context.Context, id int64) (bool, error)
}

// API serves the contacts context.
type API struct {
	svc   *contacts.Service
	now   func() time.Time
	audit auditor
}

// New builds the route table. Unmatched routes answer a problem+json 404.
func New(cfg Config) (http.Handler, error) {
	if cfg.Service == nil || cfg.DB == nil || cfg.Verifier == nil {
		return nil, errors.New("api: service, db and verifier are required")
	}
	if err := auth.CheckInternalSecret(cfg.InternalSecret); err != nil {
		return nil, errors.New("api: internal secret " + err.Error())
	}
	a := &API{svc: cfg.Service, now: cfg.Now, audit: auditor{db: cfg.DB}}
	if a.now == nil {
		a.now = time.Now
	}
	mux := http.NewServeMux()
	jwt := cfg.Verifier.Require
	guards := httpx.Guards{
		route.JWT:   jwt,
		route.Admin: func(h http.Handler) http.Handler { return jwt(auth.RequireAdmin(h)) },
	}
	svc := cfg.Service
	// Writes to one record follow the caller's edit scope (403 outside).
	contactWrite := directory.RequireWrite(mergedOwner(cfg.Merger, contacts.ObjectContact, svc.ContactOwner), svc.CanWrite)
	companyWrite := directory.RequireWrite(mergedOwner(cfg.Merger, contacts.ObjectCompany, svc.CompanyOwner), svc.CanWrite)

	guards.Mount(mux, contactsapi.ListContacts, httpx.HandlerFunc(a.listContacts))
	// Body: contact write fields; first_name and last_name required (≤100),
	// other strings ≤255, notes ≤100,000, email format, status
	// active|inactive (default active), company_id and assigned_to must
	// exist, tags comma-separated (normalised). 201: {"success":true,
	// "data":contact,"message"}. 400, 415, 422 validation_failed.
	guards.Mount(mux, contactsapi.CreateContact,
		create(svc.CreateContact, contactsapi.CreateContact, contactsapi.GetContact, contactID))
	guards.Mount(mux, contactsapi.GetContactTemplate, httpx.HandlerFunc(a.template))
	guards.Mount(mux, contactsapi.ExportContacts, httpx.HandlerFunc(a.export))
	guards.Mount(mux, contactsapi.ImportContacts, httpx.HandlerFunc(a.importCSV))
	// 200: {"success":true,"data":contact}; 404 not_found. With
	// ?id_property=email (or a unique custom field) {id} is that value; a
	// present but empty id_property is refused (422), as leads and deals
	// refuse it, rather than read by id.
	guards.Mount(mux, contactsapi.GetContact,
		mergedAware(cfg.Merger, contacts.ObjectContact, bulkhttp.ByIDProperty(read("contact", svc.GetContact, httpx.OK), svc.ContactByExternalID)))
	// Body: contact write fields; first_name and last_name required; an
	// absent optional field keeps its value, null or "" clears it (status
	// resets to active). 200: {"success":true,"data":contact,"message"};
	// 404; 422.
	guards.Mount(mux, contactsapi.UpdateContact,
		contactWrite(update("contact", svc.UpdateContact, contactsapi.UpdateContact)))
	// The contact, its notes and its tasks are removed permanently. 200:
	// {"success":true,"message"}; 404.
	guards.Mount(mux, contactsapi.DeleteContact,
		contactWrite(remove("contact", svc.DeleteContact, contactsapi.DeleteContact)))

	// A record's history is as visible as the record (its GET's 404).
	guards.Mount(mux, contactsapi.ContactHistory, history.Handler(cfg.DB, "contact", func(ctx context.Context, id int64) error {
		_, err := svc.GetContact(ctx, id)
		return mergedErr(ctx, cfg.Merger, contacts.ObjectContact, id, err)
	}))

	guards.Mount(mux, historyapi.Admin, history.AdminHandler(cfg.DB, "contact", "company"))

	refs := activity.References{Company: svc.CompanyExists}
	if cfg.Deals != nil {
		refs.Deal = cfg.Deals.DealExists
	}
	notes, err := activity.New(activity.Config{
		DB: cfg.DB, ParentType: activity.Contact, ParentName: "contact",
		ParentExists: func(ctx context.Context, id int64) error {
			return mergedErr(ctx, cfg.Merger, contacts.ObjectContact, id, svc.ContactExists(ctx, id))
		},
		UserExists: svc.UserExists, ParentWritable: svc.ContactWritable,
		References: refs,
	})
	if err != nil {
		return nil, err
	}
	notes.Mount(mux, contactsapi.ContactActivity, guards)

	guards.Mount(mux, contactsapi.ListCompanies, httpx.HandlerFunc(a.listCompanies))
	// Body: name (required, ≤255), domain, website, phone, industry,
	// address_street/city/state/zip/country (≤255). 201: {"success":true,
	// "data":company,"message"}; 422.
	guards.Mount(mux, contactsapi.CreateCompany,
		create(svc.CreateCompany, contactsapi.CreateCompany, contactsapi.GetCompany, companyID))
	// 200: {"success":true,"data":company}; 404. With
	// ?id_property=domain (or a unique custom field) {id} is that value
	// (an empty one is the 422, as for contacts).
	guards.Mount(mux, contactsapi.GetCompany,
		mergedAware(cfg.Merger, contacts.ObjectCompany, bulkhttp.ByIDProperty(read("company", svc.GetCompany, httpx.OK), svc.CompanyByExternalID)))
	// Name required, absent fields kept, null clears; a new name shows on
	// every linked contact at once. 200: {"success":true,"data":company,
	// "message"}; 404; 422.
	guards.Mount(mux, contactsapi.UpdateCompany,
		companyWrite(update("company", svc.UpdateCompany, contactsapi.UpdateCompany)))
	guards.Mount(mux, contactsapi.CompanyHistory, history.Handler(cfg.DB, "company", func(ctx context.Context, id int64) error {
		_, err := svc.GetCompany(ctx, id)
		return mergedErr(ctx, cfg.Merger, contacts.ObjectCompany, id, err)
	}))
	// The company is removed and its contacts are kept, unlinked. 200:
	// {"success":true,"message"}; 404.
	guards.Mount(mux, contactsapi.DeleteCompany,
		companyWrite(remove("company", svc.DeleteCompany, contactsapi.DeleteCompany)))

	// Batches: up to 100 inputs checked whole, then written in one
	// transaction under the Idempotency-Key. 200 {"success":true,
	// "data":[{"status","record"}],"message"}; 422 naming inputs[i].<field>.
	bulkhttp.Mount(mux, guards, contactsapi.ContactBatch, bulkhttp.Ops[contacts.Contact, contacts.ContactInput, contactsapi.ContactUpdate]{
		Create: svc.CreateContacts, Upsert: svc.UpsertContacts, Read: svc.ReadContacts, Delete: svc.DeleteContacts,
		Update: updates(svc.UpdateContacts, func(u contactsapi.ContactUpdate) contacts.Update[contacts.ContactInput] {
			return contacts.Update[contacts.ContactInput]{ID: u.ID, In: u.ContactInput}
		}),
	})
	bulkhttp.Mount(mux, guards, contactsapi.CompanyBatch, bulkhttp.Ops[contacts.Company, contacts.CompanyInput, contactsapi.CompanyUpdate]{
		Create: svc.CreateCompanies, Upsert: svc.UpsertCompanies, Read: svc.ReadCompanies, Delete: svc.DeleteCompanies,
		Update: updates(svc.UpdateCompanies, func(u contactsapi.CompanyUpdate) contacts.Update[contacts.CompanyInput] {
			return contacts.Update[contacts.CompanyInput]{ID: u.ID, In: u.CompanyInput}
		}),
	})

	// Duplicates and merges (api/merge.go).
	mountMerges(mux, guards, cfg.Merger, contactWrite, companyWrite)

	// Internal calls act for the caller the calling context names.
	internal := history.Internal(auth.RequireInternal(cfg.InternalSecret))
	in := func(h httpx.HandlerFunc) http.Handler { return internal(h) }
	// The definitions of contacts' and companies' custom fields (admin),
	// and GET /internal/properties/{object}.
	mountProperties(mux, guards, cfg.DB, internal)
	// POST /internal/contacts (X-Internal-Token, Idempotency-Key): contact
	// write fields as contactsapi.CreateContact. 201: {"data":contact}; a
	// retry answers the contact the key created with Idempotent-Replayed:
	// true; the same key with another body is 409.
	mux.Handle(contactsapi.RouteCreateContact, in(createOnce(svc.CreateContactOnce)))
	mux.Handle(contactsapi.RouteMatchContacts, in(a.internalMatchContacts))
	// GET /internal/contacts/by-id?ids=1,2 (≤ 1000). 200: {"data":[contact...]},
	// those that exist, by ascending id; 422 for a bad list.
	mux.Handle(contactsapi.RouteContactsByID, in(a.internalContactsByID))
	// GET /internal/contacts/{id}. 200: {"data":contact}; 404.
	mux.Handle(contactsapi.RouteContact, in(read("contact", svc.GetContact, data)))
	// POST /internal/companies (Idempotency-Key): company write fields.
	// 201: {"data":company}; 409 on a reused key.
	mux.Handle(contactsapi.RouteCreateCompany, in(createOnce(svc.CreateCompanyOnce)))
	mux.Handle(contactsapi.RouteMatchCompanies, in(a.internalMatchCompanies))
	// GET /internal/companies/{id}. 200: {"data":{...company,
	// "primary_contact":contact|null}} where the primary contact is the
	// company's earliest-created contact; 404.
	mux.Handle(contactsapi.RouteCompany, in(read("company", svc.CompanyWithPrimary, data)))
	// A person's export and erasure (privacy.go).
	if err := mountPrivacy(mux, internal, cfg.DB, svc); err != nil {
		return nil, err
	}

	return httpx.Routes(mux), nil
}

// data writes the internal API's success body: 200 {"data":v}.
func data(w http.ResponseWriter, v any) {
	httpx.JSON(w, http.StatusOK, map[string]any{"data": v})
}

// ---- handlers of one record ----

// pathID reads the path's {id}; an id that cannot exist is resource's 404.
func pathID(r *http.Request, resource string) (int64, error) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return 0, fault.NotFound(resource)
	}
	return id, nil
}

// read answers with reply (httpx.OK or data) what get returns for {id}.
func read[T any](resource string, get func(context.Context, int64) (T, error), reply func(http.ResponseWriter, any)) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r, resource)
		if err != nil {
			return err
		}
		v, err := get(r.Context(), id)
		if err != nil {
			return err
		}
		reply(w, v)
		return nil
	}
}

// create decodes the JSON body, stores it with fn and answers 201 with
// decl's message and the Location of the new record, the address of its
// route at (its GET) with the record's id.
func create[In, T any](fn func(context.Context, In) (T, error), decl, at route.Route, id func(T) int64) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var in In
		if err := httpx.Decode(w, r, &in, 0); err != nil {
			return err
		}
		v, err := fn(r.Context(), in)
		if err != nil {
			return err
		}
		w.Header().Set("Location", at.Location(id(v)))
		httpx.Created(w, v, decl.Message)
		return nil
	}
}

func contactID(c contacts.Contact) int64 { return c.ID }
func companyID(c contacts.Company) int64 { return c.ID }

// update decodes the JSON body, applies it to {id} with fn and answers 200
// with decl's message.
func update[In, T any](resource string, fn func(context.Context, int64, In) (T, error), decl route.Route) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r, resource)
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
		httpx.Updated(w, v, decl.Message)
		return nil
	}
}

// remove deletes {id} with del and answers 200 with decl's message.
func remove(resource string, del func(context.Context, int64) error, decl route.Route) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r, resource)
		if err != nil {
			return err
		}
		if err := del(r.Context(), id); err != nil {
			return err
		}
		httpx.Deleted(w, decl.Message)
		return nil
	}
}

// createOnce is an internal create keyed by the Idempotency-Key header
// (pkg/idempotency): 201 {"data":record}, the record of the first request
// with the key on a retry, marked Idempotent-Replayed.
func createOnce[In, T any](fn func(context.Context, string, In) (idempotency.Done[T], error)) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		key, err := idempotency.Key(r)
		if err != nil {
			return err
		}
		var in In
		if err := httpx.Decode(w, r, &in, 0); err != nil {
			return err
		}
		done, err := fn(r.Context(), key, in)
		if err != nil {
			return err
		}
		idempotency.MarkReplayed(w, done.Replayed)
		httpx.JSON(w, http.StatusCreated, map[string]any{"data": done.Value})
		return nil
	}
}

// contactFilter reads the list filters shared by the contact list and the
// export (custom fields' included), and the caller that scope=me and
// scope=team refer to.
func (a *API) contactFilter(r *http.Request) (contacts.Filter, error) {
	defs, err := a.svc.Definitions(r.Context(), propertyapi.Contacts)
	if err != nil {
		return contacts.Filter{}, err
	}
	f, err := ParseContactFilter(r.URL.Query(), defs)
	if c := auth.FromContext(r.Context()); c != nil {
		f.Caller = c.UserID()
		f.CallerTeam = c.TeamID
	}
	return f, err
}

// ParseContactFilter reads the contact list's query parameters: the
// common ones, status, company_id, assigned_to and source, and the
// cf[...] filters and cf.<name> sort of defs. Every bad parameter is
// named in one invalid-input fault.
func ParseContactFilter(values url.Values, defs []customfield.Definition) (contacts.Filter, error) {
	p := listparam.Parse(values, listparam.Options{Sorts: contacts.ContactSorts, DefaultSort: contacts.DefaultSort, Sync: true,
		CustomFields: true, Definitions: defs})
	f := contacts.Filter{
		Status:     p.Enum("status", contacts.StatusActive, contacts.StatusInactive),
		CompanyID:  p.Int64("company_id"),
		AssignedTo: p.Int64("assigned_to"),
		Source:     p.String("source"),
	}
	f.Query, f.Custom = p.Query(), p.Custom()
	return f, p.Err()
}

// listContacts serves contactsapi.ListContacts.
//
// Query: page (≥1, default 1), per_page (1..100, default 25, larger clamps
// to 100), search (case-insensitive substring of first, last or full name,
// email, phone, mobile, company name), status (active|inactive),
// company_id, assigned_to, source, date_from/date_to (YYYY-MM-DD, inclusive
// UTC days of created_at), scope (me|team|company), sort_by (name default,
// email, phone, company_name, status, created_at), sort_dir (ASC|DESC).
// 200: {"data":[contact],"current_page","last_page","per_page","total"}.
// 401 unauthenticated; 422 validation_failed naming each bad parameter.
func (a *API) listContacts(w http.ResponseWriter, r *http.Request) error {
	f, err := a.contactFilter(r)
	if err != nil {
		return err
	}
	list, total, err := a.svc.ListContacts(r.Context(), f)
	if err != nil {
		return err
	}
	httpx.JSON(w, http.StatusOK, envelope.NewPage(list, f.Query, total))
	return nil
}

// template serves contactsapi.GetContactTemplate (admin): the import header line
// (the custom fields' columns included) as a CSV download
// (contacts-template.csv). 403 for non-admins.
func (a *API) template(w http.ResponseWriter, r *http.Request) error {
	custom, err := a.svc.CSVColumns(r.Context())
	if err != nil {
		return err
	}
	csvx.Template(w, "contacts-template.csv", contacts.ImportHeader(custom))
	return nil
}

// ExportHeader is the export's column layout: id, the import columns
// (custom fields included), then created_at and updated_at.
func ExportHeader(custom []contacts.CustomColumn) []string {
	return append(append([]string{"id"}, contacts.ImportHeader(custom)...), "created_at", "updated_at")
}

// export serves contactsapi.ExportContacts (admin): every contact matching the
// list filters (the same query parameters as the list, without paging),
// streamed as CSV (contacts-YYYYMMDD.csv) in constant memory, with
// formula-injection escaping. PostgreSQL writes the rows (COPY TO through
// csvx.Copy, byte for byte what csvx.Writer would write). 403 for
// non-admins; 422 for bad filters.
func (a *API) export(w http.ResponseWriter, r *http.Request) error {
	f, err := a.contactFilter(r)
	if err != nil {
		return err
	}
	custom, err := a.svc.CSVColumns(r.Context())
	if err != nil {
		return err
	}
	fields := make([]string, len(custom))
	for i, c := range custom {
		fields[i] = c.Def.Name
	}
	dl := csvx.NewDownload(w, "contacts-"+a.now().UTC().Format("20060102")+".csv", ExportHeader(custom))
	rows := &csvx.RowCounter{W: dl}
	if err := a.svc.ExportContacts(r.Context(), f, fields, rows); err != nil {
		if !dl.Started() {
			return err
		}
		// Headers are gone: abort the response so the client sees a broken
		// download instead of a silently truncated file.
		slog.ErrorContext(r.Context(), "contact export failed mid-stream", "error", err.Error())
		panic(http.ErrAbortHandler)
	}
	if err := dl.Start(); err == nil {
		dl.Flush()
	}
	a.audit.record(r.Context(), audit.Entry{Action: identityapi.AuditExportRan, Object: "contact",
		Details: map[string]any{"object": "contact", "filters": audit.Filters(r.URL.Query()), "rows": rows.Rows}})
	return nil
}

// importSlack allows the multipart framing around a maximal file.
const importSlack = 1 << 20

// tooLarge is the answer for an upload over contacts.MaxImportBytes.
func tooLarge() error { return fault.TooLargef("the upload exceeds 20 MB") }

// isTooLarge reports a read past the request's http.MaxBytesReader.
func isTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

// importCSV serves contactsapi.ImportContacts (admin): multipart/form-data with
// the CSV in field "file" (template layout or another system's export:
// see docs/import.md; a custom field's column is headed by its label or
// cf.<name>), optionally preceded by "mapping" (JSON object, header label
// → field or cf.<name>, "" ignores) and "dry_run" (true: validate and
// count, write nothing). 200: {"success":true,"message","imported",
// "skipped","errors":["Row N: ..."],"encoding","delimiter",
// "ignored_columns","dry_run"}. A file that cannot be imported as a whole
// — missing, not text, empty, missing first_name/last_name columns, broken
// quoting, a bad mapping — is 422 and over 20 MB or 100,000 rows is 413;
// either way nothing is written. 403 for non-admins.
func (a *API) importCSV(w http.ResponseWriter, r *http.Request) error {
	if r.ContentLength > contacts.MaxImportBytes+importSlack {
		return tooLarge()
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return csvx.Invalid("a multipart/form-data upload with a CSV file in field \"file\" is required")
	}
	r.Body = http.MaxBytesReader(w, r.Body, contacts.MaxImportBytes+importSlack)
	mr, err := r.MultipartReader()
	if err != nil {
		return csvx.Invalid("the upload is not a valid multipart form")
	}
	res, err := a.importUpload(r.WithContext(history.WithVia(r.Context(), historyapi.ViaImport)), mr)
	if err != nil {
		if isTooLarge(err) {
			err = tooLarge()
		}
		return err
	}
	if !res.DryRun {
		a.audit.record(r.Context(), audit.Entry{Action: identityapi.AuditImportRan, Object: "contact",
			Details: map[string]any{"object": "contact", "imported": res.Imported, "skipped": res.Skipped}})
	}
	httpx.JSON(w, http.StatusOK, importAnswer(res))
	return nil
}

// importAnswer is the body of a successful import: the result with the
// envelope's success flag and its one-line summary.
func importAnswer(r contacts.ImportResult) contactsapi.ContactImportResult {
	a := r.ImportResult
	a.Success, a.Message = true, r.Summary()
	return contactsapi.ContactImportResult{ImportResult: a, Duplicates: r.Duplicates}
}

func (a *API) importUpload(r *http.Request, mr *multipart.Reader) (contacts.ImportResult, error) {
	up, err := csvx.ReadUpload(mr)
	if err != nil {
		var f *fault.Error
		if isTooLarge(err) || errors.As(err, &f) {
			return contacts.ImportResult{}, err
		}
		return contacts.ImportResult{}, csvx.Invalid("is required")
	}
	if ext := strings.ToLower(path.Ext(up.File.FileName())); ext != "" && ext != ".csv" && ext != ".txt" && ext != ".tsv" {
		return contacts.ImportResult{}, csvx.Invalid("the file is not a CSV file")
	}
	// What follows the file is read before the import commits.
	rest := func() error {
		err := up.Rest()
		var f *fault.Error
		if err == nil || isTooLarge(err) || errors.As(err, &f) {
			return err
		}
		return csvx.Invalid("the upload is not a valid multipart form")
	}
	return a.svc.Import(r.Context(), up.File, contacts.ImportOptions{Mapping: up.Mapping, DryRun: up.DryRun}, rest)
}

// listCompanies serves contactsapi.ListCompanies.
//
// Query: page, per_page, search (name, domain, website, phone, industry),
// date_from/date_to, sort_by (name default, created_at), sort_dir.
// 200: the pagination envelope of company records; 422 for bad parameters.
func (a *API) listCompanies(w http.ResponseWriter, r *http.Request) error {
	defs, err := a.svc.Definitions(r.Context(), propertyapi.Companies)
	if err != nil {
		return err
	}
	p := listparam.Parse(r.URL.Query(), listparam.Options{Sorts: contacts.CompanySorts, DefaultSort: contacts.DefaultSort, Sync: true,
		CustomFields: true, Definitions: defs})
	if err := p.Err(); err != nil {
		return err
	}
	f := contacts.CompanyFilter{Query: p.Query(), Custom: p.Custom()}
	list, total, err := a.svc.ListCompanies(r.Context(), f)
	if err != nil {
		return err
	}
	httpx.JSON(w, http.StatusOK, envelope.NewPage(list, f.Query, total))
	return nil
}

// internalMatchContacts serves GET /internal/contacts/match?email=: the
// contacts whose email equals the given one ignoring case.
// 200: {"data":[contact...]}; 422 without email.
func (a *API) internalMatchContacts(w http.ResponseWriter, r *http.Request) error {
	list, err := a.svc.ContactsByEmail(r.Context(), r.URL.Query().Get("email"))
	if err != nil {
		return err
	}
	data(w, list)
	return nil
}

// internalContactsByID serves GET /internal/contacts/by-id?ids=.
func (a *API) internalContactsByID(w http.ResponseWriter, r *http.Request) error {
	ids, ok := contactsapi.ParseIDs(r.URL.Query().Get("ids"))
	if !ok {
		return fault.Invalid("ids", "must be 1 to 1000 comma-separated ids")
	}
	list, err := a.svc.ContactsByID(r.Context(), ids)
	if err != nil {
		return err
	}
	data(w, list)
	return nil
}

// internalMatchCompanies serves GET /internal/companies/match?name=&limit=
// (limit 1..50, default 5): companies whose name resembles name ignoring
// case and punctuation, best first. 200: {"data":[{...company,"score"}]};
// 422 without name or with a bad limit.
func (a *API) internalMatchCompanies(w http.ResponseWriter, r *http.Request) error {
	limit := contacts.DefaultMatchLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fault.Invalid("limit", "must be an integer between 1 and 50")
		}
		limit = n
	}
	list, err := a.svc.MatchCompanies(r.Context(), r.URL.Query().Get("name"), limit)
	if err != nil {
		return err
	}
	data(w, list)
	return nil
}
