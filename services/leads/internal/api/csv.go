package api

// Lead CSV: the import template, the streamed export and the bulk import,
// on top of pkg/csvx.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/csvx"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/services/leads/internal/leads"
	"github.com/opencrm/crm/services/leads/internal/store"
)

// Limits of an import: the largest file, the most rows it accepts and the
// most row errors it reports.
const (
	MaxImportBytes  = 20 << 20
	MaxImportRows   = 100_000
	MaxImportErrors = 1_000
)

// CSVHeader is the lead column layout of the template and the import,
// before the custom fields' columns (csvHeader).
var CSVHeader = []string{"first_name", "last_name", "email", "phone", "company", "job_title", "source", "status", "notes", "tags"}

// CSVColumns are the import's columns. Each takes the header labels of other
// systems' exports from csvx's one label table (docs/import.md).
var CSVColumns = []csvx.Column{
	{Name: "first_name", Labels: csvx.KeyFirstName, Required: true},
	{Name: "last_name", Labels: csvx.KeyLastName, Required: true},
	{Name: "email", Labels: csvx.KeyEmail},
	{Name: "phone", Labels: csvx.KeyPhone, Aliases: []string{"Mobile", "Mobile Phone", "Mobile Phone Number", "MobilePhone"}},
	{Name: "company", Labels: csvx.KeyCompany},
	{Name: "job_title", Labels: csvx.KeyJobTitle},
	{Name: "source", Labels: csvx.KeySource},
	{Name: "status", Labels: csvx.KeyLeadStatus},
	{Name: "notes", Labels: csvx.KeyNotes},
	{Name: "tags", Labels: csvx.KeyTags},
}

// fullName splits a single full-name column when the file has no first
// and last name columns.
var fullName = &csvx.FullName{First: "first_name", Last: "last_name"}

// LeadCSV implements CSV.
type LeadCSV struct {
	db    *db.DB
	store *store.Store
}

// NewCSV wires the CSV handlers.
func NewCSV(d *db.DB, st *store.Store) (*LeadCSV, error) {
	if d == nil || st == nil {
		return nil, errors.New("api: csv needs db and store")
	}
	return &LeadCSV{db: d, store: st}, nil
}

// Template answers the empty import template: the header line, with a
// column per custom field.
func (c *LeadCSV) Template(w http.ResponseWriter, r *http.Request) error {
	defs, err := c.store.Definitions(r.Context())
	if err != nil {
		return err
	}
	csvx.Template(w, "leads-template.csv", csvHeader(customColumns(defs)))
	return nil
}

// Export streams every lead matching the list filters (in the list's
// order) as id, the template columns (the custom fields' included),
// created_at, updated_at. PostgreSQL writes the rows (COPY TO through
// csvx.Copy, byte for byte what csvx.Writer would write).
func (c *LeadCSV) Export(w http.ResponseWriter, r *http.Request) error {
	claims := auth.FromContext(r.Context())
	defs, err := c.store.Definitions(r.Context())
	if err != nil {
		return err
	}
	f, err := parseFilter(r.URL.Query(), claims.UserID(), defs)
	if err != nil {
		return err
	}
	custom := customColumns(defs)
	fields := make([]string, len(custom))
	for i, col := range custom {
		fields[i] = col.def.Name
	}
	// The download starts with the first row (or at the end, for none), so
	// an error before it is still a problem answer.
	dl := csvx.NewDownload(w, "leads-"+time.Now().UTC().Format("20060102")+".csv", exportHeader(custom))
	rows := &csvx.RowCounter{W: dl}
	if err := c.store.Export(r.Context(), f, fields, rows); err != nil {
		if !dl.Started() {
			return err
		}
		// Mid-stream the status is sent: the truncated body is the signal.
		return nil
	}
	if err := dl.Start(); err == nil {
		dl.Flush()
	}
	recordExport(r.Context(), c.db, r.URL.Query(), rows.Rows)
	return nil
}

func exportHeader(custom []customColumn) []string {
	h := append([]string{"id"}, csvHeader(custom)...)
	return append(h, "created_at", "updated_at")
}

// Import streams the multipart field "file" (optionally preceded by
// "mapping" and "dry_run", see docs/import.md) into the store in one
// transaction: a rejected file, or one without data rows, imports
// nothing. A custom field's column is headed by its label or cf.<name>,
// and a mapping may target cf.<name>. Invalid rows, duplicate emails and
// values of unique custom fields held elsewhere are skipped with
// "Row N: ..." messages in row order. Memory stays bounded whatever the file's size:
// rows go to the database as they are read, and only the first MaxImportErrors
// messages are kept.
func (c *LeadCSV) Import(w http.ResponseWriter, r *http.Request) error {
	// The import runs in the request: its leads are the caller's, via import.
	res, err := c.importFile(w, r.WithContext(history.WithVia(r.Context(), historyapi.ViaImport)))
	if err != nil {
		return err
	}
	httpx.JSON(w, http.StatusOK, res)
	return nil
}

type rowErr struct {
	n   int
	msg string
}

func (c *LeadCSV) importFile(w http.ResponseWriter, r *http.Request) (leadsapi.LeadImportResult, error) {
	claims := auth.FromContext(r.Context())
	// Room for the multipart envelope around a file at the limit.
	r.Body = http.MaxBytesReader(w, r.Body, MaxImportBytes+1<<20)
	mr, err := r.MultipartReader()
	if err != nil {
		return leadsapi.LeadImportResult{}, csvx.Invalid("a CSV file is required in the multipart field \"file\"")
	}
	up, err := csvx.ReadUpload(mr)
	if errors.Is(err, io.EOF) {
		return leadsapi.LeadImportResult{}, csvx.Invalid("a CSV file is required in the multipart field \"file\"")
	}
	if err != nil {
		return leadsapi.LeadImportResult{}, tooLargeBody(err)
	}
	defs, err := c.store.Definitions(r.Context())
	if err != nil {
		return leadsapi.LeadImportResult{}, err
	}
	custom := customColumns(defs)
	rd, err := csvx.Open(up.File, importColumns(custom), csvx.Options{
		Limits:   csvx.Limits{MaxBytes: MaxImportBytes, MaxRows: MaxImportRows},
		Mapping:  up.Mapping,
		FullName: fullName,
	})
	if err != nil {
		return leadsapi.LeadImportResult{}, tooLargeBody(err)
	}
	res := leadsapi.LeadImportResult{ImportResult: envelope.ImportResult{Success: true, DryRun: up.DryRun}}
	listed := func(ctx context.Context, id int64) (bool, error) { return directory.UserExists(ctx, c.db, id) }
	cr := newCustomReader(custom, rd.Has, listed, c.store.UserExists)
	// The first MaxImportErrors invalid rows (they come in row order) and how
	// many there were.
	var errs []rowErr
	invalid := 0
	noUsers := func(context.Context, int64) (bool, error) { return false, nil }
	createdBy := claims.UserID()
	data := 0
	next := func() (store.ImportRow, bool, error) {
		for {
			rec, err := rd.Next()
			if errors.Is(err, io.EOF) {
				if data == 0 {
					return store.ImportRow{}, false, csvx.Invalid("the file has no data rows")
				}
				return store.ImportRow{}, false, nil
			}
			if err != nil {
				return store.ImportRow{}, false, tooLargeBody(err)
			}
			if rec.Blank() {
				continue
			}
			data++
			in := leads.Input{FirstName: rec.Get("first_name"), LastName: rec.Get("last_name")}
			for _, f := range []struct {
				name string
				dst  *patch.Field[string]
			}{
				{"email", &in.Email}, {"phone", &in.Phone}, {"company", &in.Company}, {"job_title", &in.JobTitle},
				{"source", &in.Source}, {"status", &in.Status}, {"notes", &in.Notes}, {"tags", &in.Tags},
			} {
				if rd.Has(f.name) {
					*f.dst = patch.Of(rec.Get(f.name))
				}
			}
			in.Status.Value = leads.ImportStatus(in.Status.Value)
			l := leads.Lead{CreatedBy: &createdBy}
			vals, bad, err := cr.values(r.Context(), rec)
			if err != nil {
				return store.ImportRow{}, false, err
			}
			if err := withCustom(leads.Apply(r.Context(), &l, in, noUsers), bad); err != nil {
				if invalid++; len(errs) < MaxImportErrors {
					errs = append(errs, rowErr{rec.Row, rowError(rec.Row, err)})
				}
				continue
			}
			l.CustomFields = vals
			return store.ImportRow{Row: rec.Row, Lead: l}, true, nil
		}
	}
	out, err := c.store.Import(r.Context(), next, store.ImportOptions{
		DryRun:      up.DryRun,
		MaxSkips:    MaxImportErrors,
		Definitions: defs,
		// Every row was read (and counted) before the import writes.
		Audit: func(ctx context.Context, tx pgx.Tx, out store.ImportOutcome) error {
			return recordImport(ctx, tx, out.Imported, invalid+out.Skipped)
		},
		BeforeWrite: func() error {
			if err := up.Rest(); err != nil {
				return tooLargeBody(err)
			}
			return nil
		},
	})
	if err != nil {
		return leadsapi.LeadImportResult{}, err
	}
	for _, s := range out.Skips {
		if s.Lead > 0 {
			res.Duplicates = append(res.Duplicates, leadsapi.LeadImportDuplicate{Row: s.Row, Email: s.Value, DuplicateOf: s.Lead})
		}
		msg := fmt.Sprintf("Row %d: a lead with %s %s already exists", s.Row, s.Column, s.Value)
		if s.DupOf > 0 {
			msg = fmt.Sprintf("Row %d: duplicate %s %s (same as row %d)", s.Row, s.Column, s.Value, s.DupOf)
		}
		errs = append(errs, rowErr{s.Row, msg})
	}
	slices.SortStableFunc(errs, func(a, b rowErr) int { return a.n - b.n })
	errs = errs[:min(len(errs), MaxImportErrors)]
	res.Errors = make([]string, len(errs))
	for i, e := range errs {
		res.Errors[i] = e.msg
	}
	rep := rd.Report()
	res.Encoding, res.Delimiter, res.IgnoredColumns = rep.Encoding, rep.Delimiter, rep.IgnoredColumns
	res.Imported, res.Skipped = out.Imported, invalid+out.Skipped
	verb := "Imported"
	if res.DryRun {
		verb = "Dry run: would import"
	}
	res.Message = fmt.Sprintf("%s %d leads, skipped %d", verb, res.Imported, res.Skipped)
	return res, nil
}

// tooLargeBody maps the request body limit to 413; other problems pass.
func tooLargeBody(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return problem.TooLarge(fmt.Sprintf("the file exceeds %d bytes", MaxImportBytes))
	}
	var known fault.Coder // a fault or a problem: already the client's answer
	if errors.As(err, &known) {
		return err
	}
	return csvx.Invalid("the upload cannot be read as multipart form data")
}

// withCustom adds a row's custom-field problems to the error of its
// built-in fields (leads.Apply's): one validation fault naming every bad
// column.
func withCustom(err error, bad []fault.Field) error {
	if len(bad) == 0 {
		return err
	}
	var own *fault.Error
	if err == nil || (errors.As(err, &own) && own.Kind == fault.KindInvalid) {
		var fields []fault.Field
		if own != nil {
			fields = own.Fields
		}
		return fault.Validation(append(append([]fault.Field(nil), fields...), bad...)...)
	}
	return err
}

func rowError(row int, err error) string {
	var known fault.Coder // the row's validation fault (or a problem)
	if !errors.As(err, &known) {
		return fmt.Sprintf("Row %d: invalid row", row)
	}
	p := problem.From(err)
	if len(p.Errors) == 0 {
		return fmt.Sprintf("Row %d: invalid row", row)
	}
	parts := make([]string, len(p.Errors))
	for i, fe := range p.Errors {
		parts[i] = fe.Field + " " + fe.Message
	}
	return fmt.Sprintf("Row %d: %s", row, strings.Join(parts, "; "))
}
