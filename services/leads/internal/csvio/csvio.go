// Package csvio serves lead CSV (DESIGN 8): the import template, the
// streamed export and the bulk import, on top of pkg/csvx.
package csvio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/csvx"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/services/leads/internal/leads"
	"github.com/opencrm/crm/services/leads/internal/store"
)

// Limits of an import (DESIGN 8).
const (
	MaxBytes  = 20 << 20
	MaxRows   = 100_000
	MaxErrors = 1_000
)

// Header is the lead column layout of the template and the import.
var Header = []string{"first_name", "last_name", "email", "phone", "company", "job_title", "source", "status", "notes", "tags"}

// Columns are the import's columns with the header spellings spreadsheets
// and other CRMs commonly export.
var Columns = []csvx.Column{
	{Name: "first_name", Aliases: []string{"First", "First Name", "Firstname", "Given Name", "Forename"}, Required: true},
	{Name: "last_name", Aliases: []string{"Last", "Last Name", "Lastname", "Surname", "Family Name"}, Required: true},
	{Name: "email", Aliases: []string{"E-mail", "Email Address", "E-mail Address", "Mail"}},
	{Name: "phone", Aliases: []string{"Phone Number", "Telephone", "Tel", "Mobile", "Phone 1"}},
	{Name: "company", Aliases: []string{"Company Name", "Organization", "Organisation", "Account", "Account Name"}},
	{Name: "job_title", Aliases: []string{"Title", "Job", "Position", "Role"}},
	{Name: "source", Aliases: []string{"Lead Source", "Origin"}},
	{Name: "status", Aliases: []string{"Lead Status", "Stage"}},
	{Name: "notes", Aliases: []string{"Note", "Description", "Comments", "Comment"}},
	{Name: "tags", Aliases: []string{"Tag", "Labels", "Label"}},
}

// CSV implements api.CSV.
type CSV struct {
	db    *db.DB
	store *store.Store
}

// New wires the CSV handlers.
func New(d *db.DB, st *store.Store) (*CSV, error) {
	if d == nil || st == nil {
		return nil, errors.New("csvio: db and store are required")
	}
	return &CSV{db: d, store: st}, nil
}

// Template answers the empty import template: the header line.
func (c *CSV) Template(w http.ResponseWriter, r *http.Request) {
	csvx.Attachment(w, "leads-template.csv")
	cw := csvx.NewWriter(w)
	if err := cw.WriteHeader(Header); err == nil {
		_ = cw.Flush()
	}
}

// Export streams every lead matching the list filters (in the list's
// order) as id, the template columns, created_at, updated_at.
func (c *CSV) Export(w http.ResponseWriter, r *http.Request) {
	claims := auth.FromContext(r.Context())
	f, err := leads.ParseFilter(r.URL.Query(), claims.UserID())
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	// The download starts with the first row (or at the end, for none), so
	// an error before it is still a problem answer.
	started := false
	cw := csvx.NewWriter(w)
	start := func() error {
		started = true
		csvx.Attachment(w, "leads-"+time.Now().UTC().Format("20060102")+".csv")
		return cw.WriteHeader(exportHeader())
	}
	err = c.store.Each(r.Context(), f, func(l leads.Lead) error {
		if !started {
			if err := start(); err != nil {
				return err
			}
		}
		return cw.Write(exportRow(l))
	})
	if err != nil {
		if !started {
			httpx.Error(w, r, err)
		}
		// Mid-stream the status is sent: the truncated body is the signal.
		return
	}
	if !started {
		_ = start()
	}
	_ = cw.Flush()
}

func exportHeader() []string {
	h := append([]string{"id"}, Header...)
	return append(h, "created_at", "updated_at")
}

func exportRow(l leads.Lead) []string {
	s := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return []string{
		strconv.FormatInt(l.ID, 10), l.FirstName, l.LastName, s(l.Email), s(l.Phone), s(l.Company),
		s(l.JobTitle), s(l.Source), l.Status, s(l.Notes), s(l.Tags),
		l.CreatedAt.String(), l.UpdatedAt.String(),
	}
}

// Result is the import answer (the spec's contact import shape).
type Result struct {
	Success  bool     `json:"success"`
	Message  string   `json:"message"`
	Imported int      `json:"imported"`
	Skipped  int      `json:"skipped"`
	Errors   []string `json:"errors"`
}

// Import reads the multipart field "file" whole before writing anything
// (a rejected file, or one without data rows, imports nothing), skips
// invalid rows and duplicate emails with "Row N: ..." messages listed in
// row order, and COPYs the valid rows.
func (c *CSV) Import(w http.ResponseWriter, r *http.Request) {
	res, err := c.importFile(w, r)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.JSON(w, http.StatusOK, res)
}

func (c *CSV) importFile(w http.ResponseWriter, r *http.Request) (Result, error) {
	claims := auth.FromContext(r.Context())
	// Room for the multipart envelope around a file at the limit.
	r.Body = http.MaxBytesReader(w, r.Body, MaxBytes+1<<20)
	part, err := filePart(r)
	if err != nil {
		return Result{}, err
	}
	rd, err := csvx.NewReader(part, Columns, csvx.Limits{MaxBytes: MaxBytes, MaxRows: MaxRows})
	if err != nil {
		return Result{}, tooLargeBody(err)
	}
	res := Result{Success: true}
	// Every skipped row's reason, sorted by row and cut to MaxErrors at
	// the end: the table's duplicates are only known after the file.
	type rowErr struct {
		n   int
		msg string
	}
	var errs []rowErr
	skip := func(n int, msg string) {
		res.Skipped++
		errs = append(errs, rowErr{n, msg})
	}
	type row struct {
		n    int
		lead leads.Lead
	}
	var rows []row
	seen := map[string]int{}
	noUsers := func(context.Context, int64) (bool, error) { return false, nil }
	createdBy := claims.UserID()
	data := 0
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Result{}, tooLargeBody(err)
		}
		if rec.Blank() {
			continue
		}
		data++
		in := leads.Input{FirstName: patch.Of(rec.Get("first_name")), LastName: patch.Of(rec.Get("last_name"))}
		for name, f := range map[string]*patch.Field[string]{
			"email": &in.Email, "phone": &in.Phone, "company": &in.Company, "job_title": &in.JobTitle,
			"source": &in.Source, "status": &in.Status, "notes": &in.Notes, "tags": &in.Tags,
		} {
			if rd.Has(name) {
				*f = patch.Of(rec.Get(name))
			}
		}
		// Status values are case-insensitive in a file, as in contacts'.
		in.Status.Value = strings.ToLower(in.Status.Value)
		l := leads.Lead{CreatedBy: &createdBy}
		if err := leads.Apply(r.Context(), &l, in, noUsers); err != nil {
			skip(rec.Row, rowError(rec.Row, err))
			continue
		}
		if l.Email != nil {
			key := strings.ToLower(*l.Email)
			if first, dup := seen[key]; dup {
				skip(rec.Row, fmt.Sprintf("Row %d: duplicate email %s (same as row %d)", rec.Row, *l.Email, first))
				continue
			}
			seen[key] = rec.Row
		}
		rows = append(rows, row{n: rec.Row, lead: l})
	}
	if data == 0 {
		return Result{}, csvx.Invalid("the file has no data rows")
	}
	// Emails already in the table are checked inside the import's
	// transaction, under its lock, so a concurrent import of the same
	// file cannot slip between the check and the write.
	batch := make([]leads.Lead, len(rows))
	for i, x := range rows {
		batch[i] = x.lead
	}
	n, existing, err := c.store.Import(r.Context(), batch)
	if err != nil {
		return Result{}, err
	}
	for _, i := range existing {
		skip(rows[i].n, fmt.Sprintf("Row %d: a lead with email %s already exists", rows[i].n, *rows[i].lead.Email))
	}
	slices.SortStableFunc(errs, func(a, b rowErr) int { return a.n - b.n })
	res.Errors = make([]string, 0, min(len(errs), MaxErrors))
	for _, e := range errs[:min(len(errs), MaxErrors)] {
		res.Errors = append(res.Errors, e.msg)
	}
	res.Imported = n
	res.Message = fmt.Sprintf("Imported %d leads, skipped %d", res.Imported, res.Skipped)
	return res, nil
}

// filePart finds the multipart field "file" without buffering the upload.
func filePart(r *http.Request) (io.Reader, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, csvx.Invalid("a CSV file is required in the multipart field \"file\"")
	}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, csvx.Invalid("a CSV file is required in the multipart field \"file\"")
		}
		if err != nil {
			return nil, tooLargeBody(err)
		}
		if p.FormName() == csvx.FileField {
			return p, nil
		}
	}
}

// tooLargeBody maps the request body limit to 413; other problems pass.
func tooLargeBody(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return problem.TooLarge(fmt.Sprintf("the file exceeds %d bytes", MaxBytes))
	}
	var p *problem.Error
	if errors.As(err, &p) {
		return err
	}
	return csvx.Invalid("the upload cannot be read as multipart form data")
}

func rowError(row int, err error) string {
	var p *problem.Error
	if !errors.As(err, &p) || len(p.Errors) == 0 {
		return fmt.Sprintf("Row %d: invalid row", row)
	}
	parts := make([]string, len(p.Errors))
	for i, fe := range p.Errors {
		parts[i] = fe.Field + " " + fe.Message
	}
	return fmt.Sprintf("Row %d: %s", row, strings.Join(parts, "; "))
}
