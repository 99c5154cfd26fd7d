// Package leads is the leads context's core: the lead record, its write
// rules, the list filter, the qualification saga and the small interfaces
// the storage and the other contexts' clients implement.
package leads

import (
	"context"
	"errors"
	"strings"

	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/csvx"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/validate"
)

// Lead statuses.
const (
	StatusNew          = "new"
	StatusContacted    = "contacted"
	StatusQualified    = "qualified"
	StatusDisqualified = "disqualified"
)

// Statuses lists every lead status, in workflow order.
var Statuses = []string{StatusNew, StatusContacted, StatusQualified, StatusDisqualified}

// Object is leads as a carrier of custom fields: a definition may not take
// a name the lead record has.
var Object = customfield.Object{Name: propertyapi.Leads, Table: "leads", Builtins: []string{
	"id", "first_name", "last_name", "email", "phone", "company", "job_title", "source", "status", "notes", "tags",
	"assigned_to", "assigned_to_name", "disqualify_reason", "qualified_at", "contact_id", "company_id", "deal_id",
	"created_by", "created_at", "updated_at"}}

// Stream is where lead events go.
var Stream = outbox.Stream("leads")

// Event types published on Stream; the data is the lead record.
const (
	EventCreated      = "lead.created"
	EventUpdated      = "lead.updated"
	EventQualified    = "lead.qualified"
	EventDisqualified = "lead.disqualified"
	EventDeleted      = "lead.deleted"
)

// MaxReason bounds a disqualification reason.
const MaxReason = 1000

// Lead is the public lead record: its own fields plus the assignee name,
// the disqualification reason and the qualification results.
type Lead = leadsapi.Lead

// Input is a create or update body. Every optional field tells absent
// (keep) from null or "" (clear); read-only and unknown fields are ignored.
type Input = leadsapi.LeadInput

// UserChecker tells whether a user id is known (the directory read model).
type UserChecker func(ctx context.Context, id int64) (bool, error)

// Apply validates in and writes it over l (a zero Lead on create). Names
// are required on create and update alike.
func Apply(ctx context.Context, l *Lead, in Input, users UserChecker) error {
	var v validate.Errors
	first, last := strings.TrimSpace(in.FirstName), strings.TrimSpace(in.LastName)
	leadsapi.CheckName(&v, "first_name", first)
	leadsapi.CheckName(&v, "last_name", last)
	l.FirstName, l.LastName = first, last
	for _, f := range []struct {
		name string
		in   patch.Field[string]
		dst  **string
		max  int
	}{
		{"email", in.Email, &l.Email, validate.MaxString},
		{"phone", in.Phone, &l.Phone, validate.MaxString},
		{"company", in.Company, &l.Company, validate.MaxString},
		{"job_title", in.JobTitle, &l.JobTitle, validate.MaxString},
		{"source", in.Source, &l.Source, validate.MaxString},
		{"notes", in.Notes, &l.Notes, validate.MaxContent},
		{"tags", in.Tags, &l.Tags, validate.MaxString},
	} {
		if !f.in.Set {
			continue
		}
		s := strings.TrimSpace(f.in.Value)
		if f.name == "tags" {
			s = validate.Tags(s)
		}
		if s == "" || f.in.Null {
			*f.dst = nil
			continue
		}
		if f.name == "email" {
			if !leadsapi.CheckEmail(&v, f.name, s) {
				continue
			}
		} else if !v.MaxLen(f.name, s, f.max) {
			continue
		}
		*f.dst = &s
	}
	if in.Status.Set {
		s := strings.TrimSpace(in.Status.Value)
		if s == "" {
			s = StatusNew
		}
		if v.OneOf("status", s, Statuses...) {
			l.Status = s
		}
	}
	if l.Status == "" {
		l.Status = StatusNew
	}
	if in.AssignedTo.Set {
		switch {
		case in.AssignedTo.Null:
			l.AssignedTo, l.AssignedToName = nil, nil
		case in.AssignedTo.Value <= 0:
			v.Add("assigned_to", "must be a positive integer")
		default:
			ok, err := users(ctx, in.AssignedTo.Value)
			if err != nil {
				return err
			}
			if !ok {
				v.Add("assigned_to", "is not a known user")
			} else {
				id := in.AssignedTo.Value
				l.AssignedTo = &id
			}
		}
	}
	return v.Err()
}

// ApplyAll is Apply with the lead's custom fields, checked against defs:
// every problem of the body is one fault. l.CustomFields holds the values
// the lead stores (none on create) and is left holding the new ones.
func ApplyAll(ctx context.Context, l *Lead, in Input, defs []customfield.Definition, users UserChecker) error {
	err := Apply(ctx, l, in, users)
	var own *fault.Error
	if err != nil && !errors.As(err, &own) {
		return err
	}
	vals, cerr := customfield.Check(ctx, defs, customfield.Values(l.CustomFields), customfield.Input(in.CustomFields),
		customfield.UserExists(users))
	var custom *fault.Error
	switch {
	case cerr != nil && !errors.As(cerr, &custom):
		return cerr
	case own != nil && custom != nil && own.Kind == fault.KindInvalid && custom.Kind == fault.KindInvalid:
		return fault.Validation(append(append([]fault.Field(nil), own.Fields...), custom.Fields...)...)
	case err != nil:
		return err
	case cerr != nil:
		return cerr
	}
	l.CustomFields = vals
	return nil
}

// Filter is what a lead list (and the CSV export) asks for: the common
// list query and the leads' own filters.
type Filter struct {
	list.Query
	Status     string
	Source     string
	AssignedTo *int64
	// Custom is the cf[...] filters and the cf.<name> sort.
	Custom customfield.Query
	// CallerID resolves scope=me and scope=team.
	CallerID int64
}

// SortKeys are the public sort keys of the lead list; the store has an
// indexed expression for each.
var SortKeys = []string{"name", "email", "company_name", "status", "source", "assigned_to_name", "created_at", "updated_at"}

// DefaultSort is the list's order without sort_by.
const DefaultSort = "name"

// importStatuses maps the lead status values of other systems' exports
// (folded with csvx.Normalize) onto ours: Salesforce's defaults, HubSpot's
// lead statuses and Zoho CRM's. docs/import.md lists them.
var importStatuses = map[string]string{
	"new": StatusNew, "open": StatusNew, "opennotcontacted": StatusNew, "notcontacted": StatusNew,
	"contacted": StatusContacted, "workingcontacted": StatusContacted, "working": StatusContacted,
	"inprogress": StatusContacted, "attemptedtocontact": StatusContacted, "connected": StatusContacted,
	"contactinfuture": StatusContacted, "prequalified": StatusContacted,
	"qualified": StatusQualified, "closedconverted": StatusQualified, "converted": StatusQualified,
	"opendeal":     StatusQualified,
	"disqualified": StatusDisqualified, "closednotconverted": StatusDisqualified, "unqualified": StatusDisqualified,
	"notqualified": StatusDisqualified, "junklead": StatusDisqualified, "lostlead": StatusDisqualified,
	"badtiming": StatusDisqualified,
}

// ImportStatus maps a status cell of an imported file onto a lead status;
// a value it does not know is returned trimmed and lower-cased, for
// validation to refuse with the list of ours.
func ImportStatus(s string) string {
	if st, ok := importStatuses[csvx.Normalize(s)]; ok {
		return st
	}
	return strings.ToLower(strings.TrimSpace(s))
}
