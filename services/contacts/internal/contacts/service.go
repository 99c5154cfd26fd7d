package contacts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/opencrm/crm/pkg/csvx"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/listq"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/validate"
)

// IdempotentStore is the part of storage the internal API needs: a write
// whose answer is stored under the caller's Idempotency-Key.
type IdempotentStore interface {
	CreateContactOnce(ctx context.Context, key string, c Contact) (idempotency.Result, error)
	CreateCompanyOnce(ctx context.Context, key string, c Company) (idempotency.Result, error)
}

// Service applies the contacts context's rules over a Store.
type Service struct {
	store interface {
		Store
		IdempotentStore
	}
}

// NewService wires the service to its storage.
func NewService(s interface {
	Store
	IdempotentStore
}) (*Service, error) {
	if s == nil {
		return nil, errors.New("contacts: store is required")
	}
	return &Service{store: s}, nil
}

// checkRefs adds 422 errors for references that do not exist. Only fields
// the body set are checked, so a contact whose user was removed from the
// read model can still be edited.
func (s *Service) checkRefs(ctx context.Context, in ContactInput, c Contact, v *validate.Errors) error {
	if in.CompanyID.Set && c.CompanyID != nil && !v.Has("company_id") {
		ok, err := s.store.CompanyExists(ctx, *c.CompanyID)
		if err != nil {
			return err
		}
		if !ok {
			v.Add("company_id", "does not exist")
		}
	}
	if in.AssignedTo.Set && c.AssignedTo != nil && !v.Has("assigned_to") {
		ok, err := s.store.UserExists(ctx, *c.AssignedTo)
		if err != nil {
			return err
		}
		if !ok {
			v.Add("assigned_to", "is not a known user")
		}
	}
	return nil
}

func (s *Service) prepareNew(ctx context.Context, in ContactInput) (Contact, error) {
	var c Contact
	v := ApplyContact(in, &c)
	if err := s.checkRefs(ctx, in, c, v); err != nil {
		return Contact{}, err
	}
	return c, v.Err()
}

// CreateContact validates and stores a new contact.
func (s *Service) CreateContact(ctx context.Context, in ContactInput) (Contact, error) {
	c, err := s.prepareNew(ctx, in)
	if err != nil {
		return Contact{}, err
	}
	return s.store.CreateContact(ctx, c)
}

// CreateContactOnce is CreateContact keyed by an Idempotency-Key.
func (s *Service) CreateContactOnce(ctx context.Context, key string, in ContactInput) (idempotency.Result, error) {
	c, err := s.prepareNew(ctx, in)
	if err != nil {
		return idempotency.Result{}, err
	}
	return s.store.CreateContactOnce(ctx, key, c)
}

// UpdateContact applies a PUT body over the stored contact. The body is
// validated (references included) before the row is locked, so no lookup
// runs while the lock is held; validity depends on the body alone. The
// patch itself is applied to the row as read under the lock, so fields the
// body leaves out keep what a concurrent update committed.
func (s *Service) UpdateContact(ctx context.Context, id int64, in ContactInput) (Contact, error) {
	c, err := s.store.GetContact(ctx, id)
	if err != nil {
		return Contact{}, err
	}
	v := ApplyContact(in, &c)
	if err := s.checkRefs(ctx, in, c, v); err != nil {
		return Contact{}, err
	}
	if err := v.Err(); err != nil {
		return Contact{}, err
	}
	return s.store.UpdateContact(ctx, id, func(cur *Contact) error {
		return ApplyContact(in, cur).Err()
	})
}

// GetContact reads one contact.
func (s *Service) GetContact(ctx context.Context, id int64) (Contact, error) {
	return s.store.GetContact(ctx, id)
}

// DeleteContact permanently removes a contact with its notes and tasks.
func (s *Service) DeleteContact(ctx context.Context, id int64) error {
	return s.store.DeleteContact(ctx, id)
}

// ContactExists answers 404 for an unknown contact (activity's parent check).
// CompanyExists reports whether a company id is known (task references).
func (s *Service) CompanyExists(ctx context.Context, id int64) (bool, error) {
	return s.store.CompanyExists(ctx, id)
}

func (s *Service) ContactExists(ctx context.Context, id int64) error {
	ok, err := s.store.ContactExists(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return problem.NotFound("contact")
	}
	return nil
}

// UserExists validates an assignee against the directory read model.
func (s *Service) UserExists(ctx context.Context, id int64) (bool, error) {
	return s.store.UserExists(ctx, id)
}

// ContactOwner says who may change a contact.
func (s *Service) ContactOwner(ctx context.Context, id int64) (directory.Owner, error) {
	return s.store.ContactOwner(ctx, id)
}

// CompanyOwner says who may change a company (companies have no assignee:
// the creator, or the caller's scope).
func (s *Service) CompanyOwner(ctx context.Context, id int64) (directory.Owner, error) {
	return s.store.CompanyOwner(ctx, id)
}

// CanWrite answers 403 unless the caller may change a record owned by o.
func (s *Service) CanWrite(ctx context.Context, o directory.Owner) error {
	return s.store.CanWrite(ctx, o)
}

// ContactWritable answers 403 unless the caller may change the contact
// (its notes and tasks follow it), 404 when it does not exist.
func (s *Service) ContactWritable(ctx context.Context, id int64) error {
	o, err := s.store.ContactOwner(ctx, id)
	if err != nil {
		return err
	}
	return s.store.CanWrite(ctx, o)
}

// resolveScope fills the caller's team for scope=team from the read model
// (fresher than the token), falling back to the token's claim.
func (s *Service) resolveScope(ctx context.Context, f *Filter) error {
	if f.Query.Scope != "team" {
		return nil
	}
	team, err := s.store.UserTeam(ctx, f.Caller)
	if err != nil {
		return err
	}
	if team != nil {
		f.CallerTeam = team
	}
	return nil
}

// ListContacts returns one page and the total.
func (s *Service) ListContacts(ctx context.Context, f Filter) ([]Contact, int, error) {
	if err := s.resolveScope(ctx, &f); err != nil {
		return nil, 0, err
	}
	return s.store.ListContacts(ctx, f)
}

// ExportContacts streams every contact matching f.
func (s *Service) ExportContacts(ctx context.Context, f Filter, each func(Contact) error) error {
	if err := s.resolveScope(ctx, &f); err != nil {
		return err
	}
	return s.store.ExportContacts(ctx, f, each)
}

// ContactsByEmail finds contacts by email, case-insensitively and exactly.
func (s *Service) ContactsByEmail(ctx context.Context, email string) ([]Contact, error) {
	email = strings.TrimSpace(email)
	if email == "" {
		return nil, problem.Invalid("email", "is required")
	}
	return s.store.ContactsByEmail(ctx, email)
}

// ContactsByID reads those of ids that exist, by ascending id.
func (s *Service) ContactsByID(ctx context.Context, ids []int64) ([]Contact, error) {
	return s.store.ContactsByID(ctx, ids)
}

// CreateCompany validates and stores a company.
func (s *Service) CreateCompany(ctx context.Context, in CompanyInput) (Company, error) {
	var c Company
	if err := ApplyCompany(in, &c).Err(); err != nil {
		return Company{}, err
	}
	return s.store.CreateCompany(ctx, c)
}

// CreateCompanyOnce is CreateCompany keyed by an Idempotency-Key.
func (s *Service) CreateCompanyOnce(ctx context.Context, key string, in CompanyInput) (idempotency.Result, error) {
	var c Company
	if err := ApplyCompany(in, &c).Err(); err != nil {
		return idempotency.Result{}, err
	}
	return s.store.CreateCompanyOnce(ctx, key, c)
}

// UpdateCompany applies a PUT body over the company as read under its row
// lock; a rename reaches every linked contact.
func (s *Service) UpdateCompany(ctx context.Context, id int64, in CompanyInput) (Company, error) {
	return s.store.UpdateCompany(ctx, id, func(c *Company) error {
		return ApplyCompany(in, c).Err()
	})
}

// GetCompany reads one company.
func (s *Service) GetCompany(ctx context.Context, id int64) (Company, error) {
	return s.store.GetCompany(ctx, id)
}

// CompanyWithPrimary reads a company and its earliest-created contact.
func (s *Service) CompanyWithPrimary(ctx context.Context, id int64) (CompanyWithPrimary, error) {
	c, err := s.store.GetCompany(ctx, id)
	if err != nil {
		return CompanyWithPrimary{}, err
	}
	p, err := s.store.PrimaryContact(ctx, id)
	if err != nil {
		return CompanyWithPrimary{}, err
	}
	return CompanyWithPrimary{Company: c, PrimaryContact: p}, nil
}

// DeleteCompany removes a company; its contacts stay, unlinked.
func (s *Service) DeleteCompany(ctx context.Context, id int64) error {
	return s.store.DeleteCompany(ctx, id)
}

// ListCompanies returns one page of companies and the total.
func (s *Service) ListCompanies(ctx context.Context, q *listq.Query) ([]Company, int, error) {
	return s.store.ListCompanies(ctx, q)
}

// Match limits of GET /internal/companies/match.
const (
	DefaultMatchLimit = 5
	MaxMatchLimit     = 50
)

// MatchCompanies finds companies whose name resembles name, best first,
// ignoring case and punctuation ("ACME inc." finds "Acme, Inc.").
func (s *Service) MatchCompanies(ctx context.Context, name string, limit int) ([]CompanyMatch, error) {
	name = strings.TrimSpace(name)
	var v validate.Errors
	if v.Required("name", name) {
		v.MaxLen("name", name, validate.MaxString)
	}
	if limit < 1 || limit > MaxMatchLimit {
		v.Add("limit", "must be an integer between 1 and %d", MaxMatchLimit)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	return s.store.MatchCompanies(ctx, name, limit)
}

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
	// Mapping overrides header recognition (csvx.Options.Mapping).
	Mapping map[string]string
	// DryRun validates everything and writes nothing.
	DryRun bool
}

// ImportStatus maps a status cell onto a contact status: active and
// inactive in any case; anything else is returned lower-cased, for
// validation to refuse.
func ImportStatus(s string) string {
	return strings.ToLower(strings.TrimSpace(s))
}

// ImportHeader is the template's header line and the export's middle columns.
func ImportHeader() []string {
	h := make([]string, len(ImportColumns))
	for i, c := range ImportColumns {
		h[i] = c.Name
	}
	return h
}

type patchString = patch.Field[string]

// ImportRow is one valid row ready for bulk insertion.
type ImportRow struct {
	Row         int
	Contact     Contact
	CompanyName string
}

// ImportResult is the import answer: the counts and row errors, and
// how the file was read (encoding, delimiter, ignored columns).
type ImportResult struct {
	Imported int      `json:"imported"`
	Skipped  int      `json:"skipped"`
	Errors   []string `json:"errors"`
	csvx.Report
	DryRun  bool `json:"dry_run"`
	rowErrs []RowError
}

// ImportAnswer is the body of a successful import: the result with the
// envelope's success flag and a one-line summary. It is a struct, not a
// map, so TestWireTypes holds it to the documented answer.
type ImportAnswer struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
	ImportResult
}

// Answer summarises r as "Imported N contacts, skipped M" ("Dry run:
// would import ..." for a dry run).
func (r ImportResult) Answer() ImportAnswer {
	verb := "Imported"
	if r.DryRun {
		verb = "Dry run: would import"
	}
	msg := fmt.Sprintf("%s %d contacts, skipped %d", verb, r.Imported, r.Skipped)
	return ImportAnswer{Success: true, Message: msg, ImportResult: r}
}

// RowError is why one row was skipped.
type RowError struct {
	Row     int
	Message string
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
	for _, e := range r.rowErrs[:min(len(r.rowErrs), MaxImportErrs)] {
		r.Errors = append(r.Errors, fmt.Sprintf("Row %d: %s", e.Row, e.Message))
	}
}

// ParseImport reads a whole CSV file into valid rows and row errors. A
// structural problem (not CSV, missing columns, unclosed quote, limits)
// rejects the file before anything is written. Duplicate emails within the
// file are skipped here; against the table, in Store.Import.
func ParseImport(src io.Reader, opt ImportOptions) ([]ImportRow, ImportResult, error) {
	res := ImportResult{DryRun: opt.DryRun}
	r, err := csvx.Open(src, ImportColumns, csvx.Options{
		Limits:   csvx.Limits{MaxBytes: MaxImportBytes, MaxRows: MaxImportRows},
		Mapping:  opt.Mapping,
		FullName: importName,
	})
	if err != nil {
		return nil, res, err
	}
	var rows []ImportRow
	seen := map[string]int{}
	data := 0
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, res, err
		}
		if rec.Blank() {
			continue
		}
		data++
		in := ContactInput{}
		for _, f := range []struct {
			col string
			dst *patchString
		}{
			{"first_name", &in.FirstName}, {"last_name", &in.LastName}, {"email", &in.Email},
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
		if err := v.Err(); err != nil {
			res.AddError(RowError{rec.Row, fieldErrors(err)})
			continue
		}
		if c.Email != nil {
			k := strings.ToLower(*c.Email)
			if first, dup := seen[k]; dup {
				res.AddError(RowError{rec.Row, fmt.Sprintf("duplicate email %s (already in row %d)", *c.Email, first)})
				continue
			}
			seen[k] = rec.Row
		}
		rows = append(rows, ImportRow{Row: rec.Row, Contact: c, CompanyName: company})
	}
	if data == 0 {
		return nil, res, csvx.Invalid("the file has no data rows")
	}
	res.Report = r.Report()
	return rows, res, nil
}

func fieldErrors(err error) string {
	p := problem.From(err)
	parts := make([]string, 0, len(p.Errors))
	for _, fe := range p.Errors {
		parts = append(parts, fe.Field+" "+fe.Message)
	}
	return strings.Join(parts, "; ")
}

// Import bulk-writes the valid rows ParseImport read, in one transaction
// (nothing with res.DryRun), and completes res.
func (s *Service) Import(ctx context.Context, rows []ImportRow, res ImportResult) (ImportResult, error) {
	imported, skipped, err := s.store.Import(ctx, rows, res.DryRun)
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
