package contacts

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/validate"
)

// IdempotentStore is the part of storage the internal API needs: a create
// that keeps the record it made under the caller's Idempotency-Key, so a
// retry gets that record back instead of a second one.
type IdempotentStore interface {
	CreateContactOnce(ctx context.Context, key string, c Contact) (idempotency.Done[Contact], error)
	CreateCompanyOnce(ctx context.Context, key string, c Company) (idempotency.Done[Company], error)
}

// Service applies the contacts context's rules over a Store.
type Service struct {
	store interface {
		Store
		IdempotentStore
		BatchStore
	}
}

// NewService wires the service to its storage.
func NewService(s interface {
	Store
	IdempotentStore
	BatchStore
}) (*Service, error) {
	if s == nil {
		return nil, errors.New("contacts: store is required")
	}
	return &Service{store: s}, nil
}

// Definitions are the custom fields a record of object (propertyapi.Contacts
// or propertyapi.Companies) may hold, by position: what its writes are
// checked against, its reads render and its CSV columns are.
func (s *Service) Definitions(ctx context.Context, object string) ([]customfield.Definition, error) {
	return s.store.Definitions(ctx, object)
}

// checkRefs adds field errors for references that do not exist. Only fields
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

// custom checks in over the custom field values old holds (nil for a new
// record) and adds each problem to v; it returns the values the record
// will hold. users nil skips the user check, done before a row lock.
func custom(ctx context.Context, defs []customfield.Definition, old map[string]any, in map[string]json.RawMessage,
	users customfield.UserExists, v *validate.Errors) (map[string]any, error) {
	var was customfield.Values
	if old != nil {
		was = Held(old)
	}
	vals, err := customfield.Check(ctx, defs, was, in, users)
	var f *fault.Error
	switch {
	case err == nil:
		return vals, nil
	case errors.As(err, &f) && f.Kind == fault.KindInvalid:
		for _, fe := range f.Fields {
			v.Add(fe.Field, "%s", fe.Message)
		}
		return was, nil
	}
	return nil, err
}

// Held is what a record's custom_fields column stores of m (what it
// reads as, or holds): its non-null values, never nil.
func Held(m map[string]any) customfield.Values {
	out := make(customfield.Values, len(m))
	for k, v := range m {
		if v != nil {
			out[k] = v
		}
	}
	return out
}

// prepareContact validates in over c (a zero Contact for a create, else
// the contact as read) with defs: the one check of a contact write,
// single or batch.
func (s *Service) prepareContact(ctx context.Context, defs []customfield.Definition, c Contact, in ContactInput) (Contact, error) {
	old := c.CustomFields
	if c.ID == 0 {
		old = nil
	}
	v := ApplyContact(in, &c)
	if err := s.checkRefs(ctx, in, c, v); err != nil {
		return Contact{}, err
	}
	vals, err := custom(ctx, defs, old, in.CustomFields, s.store.UserExists, v)
	if err != nil {
		return Contact{}, err
	}
	c.CustomFields = vals
	return c, v.Err()
}

func (s *Service) prepareNew(ctx context.Context, in ContactInput) (Contact, error) {
	defs, err := s.store.Definitions(ctx, propertyapi.Contacts)
	if err != nil {
		return Contact{}, err
	}
	return s.prepareContact(ctx, defs, Contact{}, in)
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
func (s *Service) CreateContactOnce(ctx context.Context, key string, in ContactInput) (idempotency.Done[Contact], error) {
	c, err := s.prepareNew(ctx, in)
	if err != nil {
		return idempotency.Done[Contact]{}, err
	}
	return s.store.CreateContactOnce(ctx, key, c)
}

// applyContact is the patch a contact update applies under the row lock:
// in over the contact as committed, its references and users already
// checked (validity depends on the body alone).
func applyContact(ctx context.Context, defs []customfield.Definition, in ContactInput) func(*Contact) error {
	return func(cur *Contact) error {
		v := ApplyContact(in, cur)
		vals, err := custom(ctx, defs, cur.CustomFields, in.CustomFields, nil, v)
		if err != nil {
			return err
		}
		cur.CustomFields = vals
		return v.Err()
	}
}

// UpdateContact applies a PUT body over the stored contact. The body is
// validated (references included) before the row is locked, so no lookup
// runs while the lock is held; validity depends on the body alone. The
// patch itself is applied to the row as read under the lock, so fields the
// body leaves out keep what a concurrent update committed.
func (s *Service) UpdateContact(ctx context.Context, id int64, in ContactInput) (Contact, error) {
	defs, err := s.store.Definitions(ctx, propertyapi.Contacts)
	if err != nil {
		return Contact{}, err
	}
	c, err := s.store.GetContact(ctx, id)
	if err != nil {
		return Contact{}, err
	}
	if _, err := s.prepareContact(ctx, defs, c, in); err != nil {
		return Contact{}, err
	}
	return s.store.UpdateContact(ctx, id, applyContact(ctx, defs, in))
}

// GetContact reads one contact.
func (s *Service) GetContact(ctx context.Context, id int64) (Contact, error) {
	return s.store.GetContact(ctx, id)
}

// DeleteContact permanently removes a contact with its notes and tasks.
func (s *Service) DeleteContact(ctx context.Context, id int64) error {
	return s.store.DeleteContact(ctx, id)
}

// CompanyExists reports whether a company id is known (task references).
func (s *Service) CompanyExists(ctx context.Context, id int64) (bool, error) {
	return s.store.CompanyExists(ctx, id)
}

// ContactExists is a not-found fault for an unknown contact (activity's
// parent check).
func (s *Service) ContactExists(ctx context.Context, id int64) error {
	ok, err := s.store.ContactExists(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return fault.NotFound("contact")
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

// CanWrite is a forbidden fault unless the caller may change a record owned by o.
func (s *Service) CanWrite(ctx context.Context, o directory.Owner) error {
	return s.store.CanWrite(ctx, o)
}

// ContactWritable is a forbidden fault unless the caller may change the
// contact (its notes and tasks follow it), not found when it does not exist.
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
	if f.Scope != list.ScopeTeam {
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

// ExportContacts writes the CSV rows of every contact matching f to dst
// (Store.ExportContacts).
func (s *Service) ExportContacts(ctx context.Context, f Filter, fields []string, dst io.Writer) error {
	if err := s.resolveScope(ctx, &f); err != nil {
		return err
	}
	return s.store.ExportContacts(ctx, f, fields, dst)
}

// ContactsByEmail finds contacts by email, case-insensitively and exactly.
func (s *Service) ContactsByEmail(ctx context.Context, email string) ([]Contact, error) {
	email = strings.TrimSpace(email)
	if email == "" {
		return nil, fault.Invalid("email", "is required")
	}
	return s.store.ContactsByEmail(ctx, email)
}

// ContactsByID reads those of ids that exist, by ascending id.
func (s *Service) ContactsByID(ctx context.Context, ids []int64) ([]Contact, error) {
	return s.store.ContactsByID(ctx, ids)
}

// prepareCompany is prepareContact for a company.
func (s *Service) prepareCompany(ctx context.Context, defs []customfield.Definition, c Company, in CompanyInput) (Company, error) {
	old := c.CustomFields
	if c.ID == 0 {
		old = nil
	}
	v := ApplyCompany(in, &c)
	vals, err := custom(ctx, defs, old, in.CustomFields, s.store.UserExists, v)
	if err != nil {
		return Company{}, err
	}
	c.CustomFields = vals
	return c, v.Err()
}

func (s *Service) prepareNewCompany(ctx context.Context, in CompanyInput) (Company, error) {
	defs, err := s.store.Definitions(ctx, propertyapi.Companies)
	if err != nil {
		return Company{}, err
	}
	return s.prepareCompany(ctx, defs, Company{}, in)
}

// CreateCompany validates and stores a company.
func (s *Service) CreateCompany(ctx context.Context, in CompanyInput) (Company, error) {
	c, err := s.prepareNewCompany(ctx, in)
	if err != nil {
		return Company{}, err
	}
	return s.store.CreateCompany(ctx, c)
}

// CreateCompanyOnce is CreateCompany keyed by an Idempotency-Key.
func (s *Service) CreateCompanyOnce(ctx context.Context, key string, in CompanyInput) (idempotency.Done[Company], error) {
	c, err := s.prepareNewCompany(ctx, in)
	if err != nil {
		return idempotency.Done[Company]{}, err
	}
	return s.store.CreateCompanyOnce(ctx, key, c)
}

// applyCompany is applyContact for a company.
func applyCompany(ctx context.Context, defs []customfield.Definition, in CompanyInput) func(*Company) error {
	return func(cur *Company) error {
		v := ApplyCompany(in, cur)
		vals, err := custom(ctx, defs, cur.CustomFields, in.CustomFields, nil, v)
		if err != nil {
			return err
		}
		cur.CustomFields = vals
		return v.Err()
	}
}

// UpdateCompany applies a PUT body over the company as read under its row
// lock (its user fields checked before); a rename reaches every linked
// contact.
func (s *Service) UpdateCompany(ctx context.Context, id int64, in CompanyInput) (Company, error) {
	defs, err := s.store.Definitions(ctx, propertyapi.Companies)
	if err != nil {
		return Company{}, err
	}
	c, err := s.store.GetCompany(ctx, id)
	if err != nil {
		return Company{}, err
	}
	if _, err := s.prepareCompany(ctx, defs, c, in); err != nil {
		return Company{}, err
	}
	return s.store.UpdateCompany(ctx, id, applyCompany(ctx, defs, in))
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
func (s *Service) ListCompanies(ctx context.Context, f CompanyFilter) ([]Company, int, error) {
	return s.store.ListCompanies(ctx, f)
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
