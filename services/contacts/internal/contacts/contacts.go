// Package contacts is the core of the contacts context: the contact and
// company records, their write rules, and the service that applies them.
// Storage is behind the Store interface (PostgreSQL in internal/store);
// HTTP lives in internal/api.
package contacts

import (
	"context"
	"io"
	"strings"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/validate"
)

// Statuses of a contact.
const (
	StatusActive   = "active"
	StatusInactive = "inactive"
)

// Event types published on crm:events:contacts.
const (
	ContactCreated = "contact.created"
	ContactUpdated = "contact.updated"
	ContactDeleted = "contact.deleted"
	CompanyCreated = "company.created"
	CompanyUpdated = "company.updated"
	CompanyDeleted = "company.deleted"
	// ContactsImported is published instead of one contact.created per
	// contact, once per ImportEventIDs contacts, by a CSV import (a
	// 100,000-row import writes 100 small events, not 100,000 copies of
	// its records: their JSON was a tenth of the import's time and 57 MB
	// of outbox; consumers read the records back) and by a batch call
	// that creates several (its event carries the records it answers).
	ContactsImported = contactsapi.EventContactsImported
)

// ImportEventIDs is the most contact ids one contacts.imported event lists:
// as many as a consumer may read back in one ContactsByID call.
const ImportEventIDs = contactsapi.MaxContactsByID

// Imported is the data of a contacts.imported event: the ids of contacts
// created by one import or one batch call, ascending, with a batch call's
// records.
type Imported = contactsapi.Imported

// ImportedRaw is an Imported whose records are their JSON.
type ImportedRaw = contactsapi.ImportedRaw

// Contact is the public contact record.
type Contact = contactsapi.Contact

// Company is the public company record.
type Company = contactsapi.Company

// CompanyMatch is a company found by name similarity.
type CompanyMatch = contactsapi.CompanyMatch

// CompanyWithPrimary is a company with its earliest-created contact.
type CompanyWithPrimary struct {
	Company
	PrimaryContact *Contact `json:"primary_contact"`
}

// ContactInput is a contact write body. Absent optional fields keep their
// value on update, null or "" clears them.
type ContactInput = contactsapi.ContactInput

// CompanyInput is a company write body, with the same update rule.
type CompanyInput = contactsapi.CompanyInput

// Filter is a contact list or export request: the page, search, sort and
// common filters every list has, and the contact list's own filters.
type Filter struct {
	list.Query
	Status     string
	CompanyID  *int64
	AssignedTo *int64
	Source     string
	// Caller and CallerTeam resolve scope=me and scope=team.
	Caller     int64
	CallerTeam *int64
	// Custom is the cf[...] filters and cf.<name> sort.
	Custom customfield.Query
}

// CompanyFilter is a company list request.
type CompanyFilter struct {
	list.Query
	Custom customfield.Query
}

// ContactSorts are the contact list's sort keys (the store maps each to
// an indexed expression of the schema); name is the default.
var ContactSorts = []string{"name", "email", "phone", "company_name", "status", "created_at", "updated_at"}

// CompanySorts are the company list's sort keys; name is the default.
var CompanySorts = []string{"name", "created_at", "updated_at"}

// DefaultSort is the default sort key of both lists.
const DefaultSort = "name"

// text applies a string patch: trimmed, "" stored as NULL, max length.
func text(v *validate.Errors, field string, in patch.Field[string], dst **string, max int) {
	if !in.Set {
		return
	}
	s := strings.TrimSpace(in.Value)
	if in.Null || s == "" {
		*dst = nil
		return
	}
	v.MaxLen(field, s, max)
	*dst = &s
}

// ref applies an id patch; the referenced row is checked by the caller.
func ref(v *validate.Errors, field string, in patch.Field[int64], dst **int64) {
	if !in.Set {
		return
	}
	if !in.Null && in.Value <= 0 {
		v.Add(field, "must be a positive integer")
		return
	}
	in.Apply(dst)
}

// required applies a required name field: it must be present on create
// and update alike (first_name, last_name are required on PUT too).
func required(v *validate.Errors, field string, in string, dst *string, max int) {
	s := strings.TrimSpace(in)
	if !v.Required(field, s) {
		return
	}
	v.MaxLen(field, s, max)
	*dst = s
}

// ApplyContact validates in and writes it over c (a zero Contact for a
// create). References (company_id, assigned_to) are checked by Service.
func ApplyContact(in ContactInput, c *Contact) *validate.Errors {
	v := &validate.Errors{}
	required(v, "first_name", in.FirstName, &c.FirstName, validate.MaxName)
	required(v, "last_name", in.LastName, &c.LastName, validate.MaxName)
	text(v, "email", in.Email, &c.Email, validate.MaxString)
	if in.Email.Set && c.Email != nil && !v.Has("email") {
		v.Email("email", *c.Email)
	}
	text(v, "phone", in.Phone, &c.Phone, validate.MaxString)
	text(v, "mobile", in.Mobile, &c.Mobile, validate.MaxString)
	text(v, "job_title", in.JobTitle, &c.JobTitle, validate.MaxString)
	ref(v, "company_id", in.CompanyID, &c.CompanyID)
	text(v, "address_street", in.AddressStreet, &c.AddressStreet, validate.MaxString)
	text(v, "address_city", in.AddressCity, &c.AddressCity, validate.MaxString)
	text(v, "address_state", in.AddressState, &c.AddressState, validate.MaxString)
	text(v, "address_zip", in.AddressZip, &c.AddressZip, validate.MaxString)
	text(v, "address_country", in.AddressCountry, &c.AddressCountry, validate.MaxString)
	text(v, "notes", in.Notes, &c.Notes, validate.MaxContent)
	if in.Tags.Set {
		t := in.Tags
		t.Value = validate.Tags(t.Value)
		text(v, "tags", t, &c.Tags, validate.MaxString)
	}
	if in.Status.Set {
		s := strings.TrimSpace(in.Status.Value)
		if s == "" {
			s = StatusActive // clearing the status restores the default
		}
		if v.OneOf("status", s, StatusActive, StatusInactive) {
			c.Status = s
		}
	}
	if c.Status == "" {
		c.Status = StatusActive
	}
	text(v, "source", in.Source, &c.Source, validate.MaxString)
	ref(v, "assigned_to", in.AssignedTo, &c.AssignedTo)
	return v
}

// ApplyCompany validates in and writes it over c.
func ApplyCompany(in CompanyInput, c *Company) *validate.Errors {
	v := &validate.Errors{}
	required(v, "name", in.Name, &c.Name, validate.MaxString)
	text(v, "domain", in.Domain, &c.Domain, validate.MaxString)
	text(v, "website", in.Website, &c.Website, validate.MaxString)
	text(v, "phone", in.Phone, &c.Phone, validate.MaxString)
	text(v, "industry", in.Industry, &c.Industry, validate.MaxString)
	text(v, "address_street", in.AddressStreet, &c.AddressStreet, validate.MaxString)
	text(v, "address_city", in.AddressCity, &c.AddressCity, validate.MaxString)
	text(v, "address_state", in.AddressState, &c.AddressState, validate.MaxString)
	text(v, "address_zip", in.AddressZip, &c.AddressZip, validate.MaxString)
	text(v, "address_country", in.AddressCountry, &c.AddressCountry, validate.MaxString)
	return v
}

// Store persists contacts and companies. Every write also records its
// event in the outbox in the same transaction. Idempotent variants store
// the answer under key in that transaction too (pkg/idempotency).
type Store interface {
	// Definitions lists the custom fields of object (propertyapi.Contacts
	// or propertyapi.Companies) by position, then name.
	Definitions(ctx context.Context, object string) ([]customfield.Definition, error)
	ContactExists(ctx context.Context, id int64) (bool, error)
	CompanyExists(ctx context.Context, id int64) (bool, error)
	UserExists(ctx context.Context, id int64) (bool, error)
	UserTeam(ctx context.Context, id int64) (*int64, error)
	// ContactOwner and CompanyOwner say who may change a record (not
	// found is a fault.NotFound error).
	ContactOwner(ctx context.Context, id int64) (directory.Owner, error)
	CompanyOwner(ctx context.Context, id int64) (directory.Owner, error)
	// CanWrite is directory.CheckWrite on this context's read model.
	CanWrite(ctx context.Context, o directory.Owner) error

	// Reads answer records as the API shows them: CustomFields rendered
	// (every defined name, null where empty). Writes take the values a
	// record holds in CustomFields (customfield.Check's answer), store them
	// and claim its unique ones in the record's transaction, and answer
	// rendered records.
	GetContact(ctx context.Context, id int64) (Contact, error)
	CreateContact(ctx context.Context, c Contact) (Contact, error)
	// UpdateContact locks the contact, lets apply change it and writes it
	// back with its event, all in one transaction: apply sees every change
	// committed before it (and the custom field values the contact holds),
	// so concurrent updates of different fields all stay. An error from
	// apply rolls back and is returned as is.
	UpdateContact(ctx context.Context, id int64, apply func(*Contact) error) (Contact, error)
	DeleteContact(ctx context.Context, id int64) error
	ListContacts(ctx context.Context, f Filter) ([]Contact, int, error)
	// ExportContacts writes the CSV rows (no header line) of the contacts
	// matching f in list order to dst: ExportHeader's columns, with a
	// cell for each custom field named in fields.
	ExportContacts(ctx context.Context, f Filter, fields []string, dst io.Writer) error
	ContactsByEmail(ctx context.Context, email string) ([]Contact, error)
	ContactsByID(ctx context.Context, ids []int64) ([]Contact, error)
	// CompaniesByDomain finds companies by domain, case-insensitively, by id.
	CompaniesByDomain(ctx context.Context, domain string) ([]Company, error)

	GetCompany(ctx context.Context, id int64) (Company, error)
	CreateCompany(ctx context.Context, c Company) (Company, error)
	// UpdateCompany is UpdateContact for a company.
	UpdateCompany(ctx context.Context, id int64, apply func(*Company) error) (Company, error)
	DeleteCompany(ctx context.Context, id int64) error
	ListCompanies(ctx context.Context, f CompanyFilter) ([]Company, int, error)
	MatchCompanies(ctx context.Context, name string, limit int) ([]CompanyMatch, error)
	PrimaryContact(ctx context.Context, companyID int64) (*Contact, error)

	// Import bulk-inserts the batches next yields (nil at the end; its
	// error aborts) in one transaction, finding or creating their
	// companies, and skips rows whose email is already stored.
	Import(ctx context.Context, next func() ([]ImportRow, error), dryRun bool) (imported int, skipped []RowError, err error)
}
