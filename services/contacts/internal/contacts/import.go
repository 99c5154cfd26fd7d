package contacts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/csvx"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/validate"
)

// Import limits: the largest file and the most rows one import accepts.
const (
	MaxImportBytes = 20 << 20
	MaxImportRows  = 100_000
	MaxImportErrs  = 1000
)

// ImportColumns is the contact CSV layout, in template order. Each column
// takes the header labels of other systems' exports from csvx's one label
// table (docs/import.md).
var ImportColumns = []csvx.Column{
	{Name: "first_name", Labels: csvx.KeyFirstName, Required: true},
	{Name: "last_name", Labels: csvx.KeyLastName, Required: true},
	{Name: "email", Labels: csvx.KeyEmail},
	{Name: "phone", Labels: csvx.KeyPhone},
	{Name: "mobile", Labels: csvx.KeyMobile},
	{Name: "job_title", Labels: csvx.KeyJobTitle},
	{Name: "company_name", Labels: csvx.KeyCompany},
	{Name: "address_street", Labels: csvx.KeyStreet},
	{Name: "address_city", Labels: csvx.KeyCity},
	{Name: "address_state", Labels: csvx.KeyState},
	{Name: "address_zip", Labels: csvx.KeyZip},
	{Name: "address_country", Labels: csvx.KeyCountry},
	{Name: "notes", Labels: csvx.KeyNotes},
	{Name: "tags", Labels: csvx.KeyTags},
	{Name: "status", Labels: csvx.KeyContactStatus},
	{Name: "source", Labels: csvx.KeySource},
}

// importName splits a single full-name column when the file has no
// first and last name columns.
var importName = &csvx.FullName{First: "first_name", Last: "last_name"}

// ImportOptions are an import's form fields besides the file.
type ImportOptions struct {
	// Mapping overrides header recognition (csvx.Options.Mapping); a
	// custom field's target is cf.<name>.
	Mapping map[string]string
	// DryRun validates everything and writes nothing.
	DryRun bool
	// Definitions are the contacts' custom fields, whose columns the file
	// may hold (Service.Import reads them).
	Definitions []customfield.Definition
}

// ImportStatus maps a status cell onto a contact status: active and
// inactive in any case; anything else is returned lower-cased, for
// validation to refuse.
func ImportStatus(s string) string {
	return strings.ToLower(strings.TrimSpace(s))
}

// ImportHeader is the template's header line and the export's middle
// columns: the built-in columns, then one per custom field. A label is an
// admin's text, so it is escaped as a cell is (the import still reads it:
// header matching ignores the apostrophe).
func ImportHeader(custom []CustomColumn) []string {
	h := make([]string, 0, len(ImportColumns)+len(custom))
	for _, c := range ImportColumns {
		h = append(h, c.Name)
	}
	for _, c := range custom {
		h = append(h, csvx.Escape(c.Header))
	}
	return h
}

type patchString = patch.Field[string]

// ImportRow is one valid row ready for bulk insertion.
type ImportRow struct {
	Row         int
	Contact     Contact
	CompanyName string
	// Custom are the row's custom-field values, nil when it has none.
	Custom customfield.Values
}

// ImportResult is the import answer (the counts and row errors, and how
// the file was read: encoding, delimiter, ignored columns) with the
// unformatted reasons its errors are made of, which never go on the wire.
type ImportResult struct {
	envelope.ImportResult
	// Duplicates are the rows skipped as duplicates of stored contacts,
	// by row (at most MaxImportErrs), set by Finish.
	Duplicates []contactsapi.ImportDuplicate
	rowErrs    []RowError
}

// Summary is r in one line: "Imported N contacts, skipped M" ("Dry run:
// would import ..." for a dry run).
func (r ImportResult) Summary() string {
	verb := "Imported"
	if r.DryRun {
		verb = "Dry run: would import"
	}
	return fmt.Sprintf("%s %d contacts, skipped %d", verb, r.Imported, r.Skipped)
}

// RowError is why one row was skipped.
type RowError struct {
	Row     int
	Message string
	// Duplicate is set when the row was skipped because a stored
	// contact has its e-mail (duplicate_of in the answer).
	Duplicate *contactsapi.ImportDuplicate
}

// AddError records a skipped row's reason.
func (r *ImportResult) AddError(e RowError) {
	r.Skipped++
	r.rowErrs = append(r.rowErrs, e)
}

// Finish orders the reasons by row and keeps at most MaxImportErrs.
func (r *ImportResult) Finish() {
	slices.SortStableFunc(r.rowErrs, func(a, b RowError) int { return a.Row - b.Row })
	r.Errors = make([]string, 0, min(len(r.rowErrs), MaxImportErrs))
	r.Duplicates = nil
	for _, e := range r.rowErrs[:min(len(r.rowErrs), MaxImportErrs)] {
		r.Errors = append(r.Errors, fmt.Sprintf("Row %d: %s", e.Row, e.Message))
		if e.Duplicate != nil {
			r.Duplicates = append(r.Duplicates, *e.Duplicate)
		}
	}
}

// ImportBatch is how many valid rows ReadImport hands over at a time.
// Small enough that writing starts right after the first rows are read
// and a batch's counter trigger keeps its rows in memory, large enough
// that a batch's few round trips cost nothing beside its COPY.
const ImportBatch = 10_000

// ReadImport reads a CSV file and hands its valid rows to batch,
// ImportBatch at a time (the last batch may be shorter; batch owns each
// slice it gets), and returns the row errors and how the file was read.
// A structural problem (not CSV, missing columns, unclosed quote,
// limits) is an error that rejects the whole file, even after batches
// were handed over; so is batch's error. Custom-field cells are parsed
// by their field's type (opt.Definitions). Duplicate emails and unique
// custom values within the file are skipped here; against the table, in
// Store.Import.
func ReadImport(src io.Reader, opt ImportOptions, batch func([]ImportRow) error) (ImportResult, error) {
	var res ImportResult
	res.DryRun = opt.DryRun
	custom := CustomColumns(opt.Definitions)
	r, err := csvx.Open(src, importColumns(custom), csvx.Options{
		Limits:   csvx.Limits{MaxBytes: MaxImportBytes, MaxRows: MaxImportRows},
		Mapping:  opt.Mapping,
		FullName: importName,
	})
	if err != nil {
		return res, err
	}
	cr := newCustomReader(custom, r.Has)
	rows := make([]ImportRow, 0, ImportBatch)
	seen := map[string]int{}
	data := 0
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return res, err
		}
		if rec.Blank() {
			continue
		}
		data++
		in := ContactInput{FirstName: rec.Get("first_name"), LastName: rec.Get("last_name")}
		for _, f := range []struct {
			col string
			dst *patchString
		}{
			{"email", &in.Email},
			{"phone", &in.Phone}, {"mobile", &in.Mobile}, {"job_title", &in.JobTitle},
			{"address_street", &in.AddressStreet}, {"address_city", &in.AddressCity},
			{"address_state", &in.AddressState}, {"address_zip", &in.AddressZip},
			{"address_country", &in.AddressCountry}, {"notes", &in.Notes}, {"tags", &in.Tags},
			{"source", &in.Source},
		} {
			f.dst.Set, f.dst.Value = true, rec.Get(f.col)
		}
		in.Status.Set, in.Status.Value = true, ImportStatus(rec.Get("status"))
		var c Contact
		v := ApplyContact(in, &c)
		company := strings.TrimSpace(rec.Get("company_name"))
		v.MaxLen("company_name", company, validate.MaxString)
		vals := cr.values(rec, v)
		if err := v.Err(); err != nil {
			res.AddError(RowError{Row: rec.Row, Message: fieldErrors(err)})
			continue
		}
		email := ""
		if c.Email != nil {
			email = strings.ToLower(*c.Email)
			if first, dup := seen[email]; dup {
				res.AddError(RowError{Row: rec.Row, Message: fmt.Sprintf("duplicate email %s (already in row %d)", *c.Email, first)})
				continue
			}
		}
		if msg := cr.duplicate(rec.Row, vals); msg != "" {
			res.AddError(RowError{Row: rec.Row, Message: msg})
			continue
		}
		if email != "" {
			seen[email] = rec.Row
		}
		rows = append(rows, ImportRow{Row: rec.Row, Contact: c, CompanyName: company, Custom: vals})
		if len(rows) == ImportBatch {
			if err := batch(rows); err != nil {
				return res, err
			}
			rows = make([]ImportRow, 0, ImportBatch)
		}
	}
	if data == 0 {
		return res, csvx.Invalid("the file has no data rows")
	}
	if len(rows) > 0 {
		if err := batch(rows); err != nil {
			return res, err
		}
	}
	rep := r.Report()
	res.Encoding, res.Delimiter, res.IgnoredColumns = rep.Encoding, rep.Delimiter, rep.IgnoredColumns
	return res, nil
}

// fieldErrors is a row's validation fault as "field message; ...".
func fieldErrors(err error) string {
	var f *fault.Error
	if !errors.As(err, &f) {
		return err.Error()
	}
	parts := make([]string, 0, len(f.Fields))
	for _, fe := range f.Fields {
		parts = append(parts, fe.Field+" "+fe.Message)
	}
	return strings.Join(parts, "; ")
}

// Import reads the CSV file src and writes its valid rows in one
// transaction (nothing for a dry run). Reading overlaps writing: a
// goroutine parses and validates the next batch while the store writes
// the previous one, so on two cores the parse adds almost no time. rest
// runs once the file was read (the rest of the upload), before anything
// commits. As when the file was read before anything was written, a
// rejected file (or rest's error) is the answer even if the database
// failed meanwhile, and either way nothing is written.
func (s *Service) Import(ctx context.Context, src io.Reader, opt ImportOptions, rest func() error) (ImportResult, error) {
	defs, err := s.Definitions(ctx, propertyapi.Contacts)
	if err != nil {
		return ImportResult{}, err
	}
	opt.Definitions = defs
	batches := make(chan []ImportRow, 1)
	stop := make(chan struct{}) // closed when the store no longer takes batches
	done := make(chan struct{})
	var res ImportResult
	var readErr error
	go func() {
		defer close(done)
		defer close(batches)
		defer func() {
			if p := recover(); p != nil {
				readErr = fmt.Errorf("contacts: import: reading the file panicked: %v", p)
			}
		}()
		res, readErr = ReadImport(src, opt, func(b []ImportRow) error {
			select {
			case batches <- b:
			case <-stop: // the write failed: read on for the file's own verdict
			}
			return nil
		})
		if readErr == nil && rest != nil {
			readErr = rest()
		}
	}()
	next := func() ([]ImportRow, error) {
		if b, ok := <-batches; ok {
			return b, nil
		}
		return nil, readErr // set before batches was closed
	}
	imported, skipped, err := s.store.Import(ctx, next, opt.DryRun)
	close(stop)
	<-done
	if readErr != nil {
		return ImportResult{}, readErr
	}
	if err != nil {
		return ImportResult{}, err
	}
	res.Imported = imported
	for _, e := range skipped {
		res.AddError(e)
	}
	res.Finish()
	return res, nil
}
