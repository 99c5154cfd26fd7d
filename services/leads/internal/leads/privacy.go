package leads

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/privacy"
)

// A person's privacy requests (pkg/contract/privacyapi): the person's
// leads are those whose email equals the request's address ignoring case.
// An export answers them with their notes, tasks and history; an erasure
// deletes them with their notes, tasks and qualification progress and
// redacts their history, and that of the person's leads deleted before.
// Other leads holding the address in a custom field of type email, or
// whose email was the address once, keep their record: the erasure clears
// the value and redacts the address in their history.

// Person is everything the leads context holds about one person: the data
// of the context's part of an export.
type Person struct {
	// Leads are the person's leads as the API reads them, custom fields
	// included, by ascending id.
	Leads []Lead `json:"leads"`
	// Notes and Tasks are those of the person's leads, by lead then
	// creation.
	Notes []PersonNote       `json:"notes"`
	Tasks []contactsapi.Task `json:"tasks"`
	// History is every entry of the leads' history and of their notes'
	// and tasks', and of the person's leads deleted before (which the
	// history keeps until its retention), by lead, newest first.
	History []historyapi.HistoryEntry `json:"history"`
	// CustomFieldValues are the other leads holding the address in a
	// custom field of type email, and which field.
	CustomFieldValues []HeldValue `json:"custom_field_values"`
}

// HeldValue names a custom field of another lead that holds the person's
// address.
type HeldValue struct {
	LeadID int64  `json:"lead_id"`
	Field  string `json:"field"`
}

// PersonNote is a note with the lead it belongs to.
type PersonNote struct {
	LeadID int64 `json:"lead_id"`
	contactsapi.Note
}

// PersonStore is the storage of a person's privacy requests.
type PersonStore interface {
	// Person reads what is held about the person with email.
	Person(ctx context.Context, email string) (Person, error)
	// ErasePerson deletes the person's leads with their notes and tasks,
	// publishing lead.deleted with nothing but the id, clears the address
	// from other leads' custom fields, and redacts the history (of the
	// person's leads, present and past, and the address wherever else it
	// holds it) and the relayed events that held it, inside tx.
	ErasePerson(ctx context.Context, tx pgx.Tx, email string) (privacy.Erasure, error)
}

// Privacy is the service's part of the privacy requests
// (pkg/privacy.Person); it fails when the service's store keeps no
// person (none but the PostgreSQL store does).
func (s *Service) Privacy() (privacy.Part, error) {
	ps, ok := s.store.(PersonStore)
	if !ok {
		return nil, errors.New("leads: the store serves no privacy requests")
	}
	return privacy.Person[Person]{
		Object: "leads",
		Read: func(ctx context.Context, email string) (Person, []int64, error) {
			person, err := ps.Person(ctx, email)
			ids := make([]int64, 0, len(person.Leads))
			for _, r := range person.Leads {
				ids = append(ids, r.ID)
			}
			return person, ids, err
		},
		Delete: ps.ErasePerson,
		Found:  func(ids []int64) privacyapi.Found { return privacyapi.Found{LeadIDs: ids} },
	}, nil
}
