package contacts

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
// contacts are those whose email equals the request's address ignoring
// case. An export answers them with their notes, tasks and history; an
// erasure deletes them with their notes and tasks and redacts their
// history, and that of the person's contacts deleted before. Other
// contacts holding the address in a custom field of type email, or whose
// email was the address once, keep their record: the erasure clears the
// value and redacts the address in their history. Companies are not
// personal data: an erasure leaves them.

// Person is everything the contacts context holds about one person: the
// data of the context's part of an export.
type Person struct {
	// Contacts are the person's contacts as the API reads them, custom
	// fields included, by ascending id.
	Contacts []Contact `json:"contacts"`
	// Notes and Tasks are those of the person's contacts, by contact then
	// creation.
	Notes []PersonNote       `json:"notes"`
	Tasks []contactsapi.Task `json:"tasks"`
	// History is every entry of the contacts' history and of their notes'
	// and tasks', and of the person's contacts deleted before (which the
	// history keeps until its retention), by contact, newest first.
	History []historyapi.HistoryEntry `json:"history"`
	// CustomFieldValues are the other contacts holding the address in a
	// custom field of type email, and which field.
	CustomFieldValues []HeldValue `json:"custom_field_values"`
}

// HeldValue names a custom field of another contact that holds the
// person's address.
type HeldValue struct {
	ContactID int64  `json:"contact_id"`
	Field     string `json:"field"`
}

// PersonNote is a note with the contact it belongs to.
type PersonNote struct {
	ContactID int64 `json:"contact_id"`
	contactsapi.Note
}

// PersonStore is the storage of a person's privacy requests.
type PersonStore interface {
	// Person reads what is held about the person with email.
	Person(ctx context.Context, email string) (Person, error)
	// ErasePerson deletes the person's contacts with their notes and
	// tasks, publishing contact.deleted with nothing but the id, clears
	// the address from other contacts' custom fields, and redacts the
	// history (of the person's contacts, present and past, and the address
	// wherever else it holds it) and the relayed events that held it,
	// inside tx.
	ErasePerson(ctx context.Context, tx pgx.Tx, email string) (privacy.Erasure, error)
}

// Privacy is the service's part of the privacy requests
// (pkg/privacy.Person); it fails when the service's store keeps no
// person (none but the PostgreSQL store does).
func (s *Service) Privacy() (privacy.Part, error) {
	ps, ok := s.store.(PersonStore)
	if !ok {
		return nil, errors.New("contacts: the store serves no privacy requests")
	}
	return privacy.Person[Person]{
		Object: "contacts",
		Read: func(ctx context.Context, email string) (Person, []int64, error) {
			person, err := ps.Person(ctx, email)
			ids := make([]int64, 0, len(person.Contacts))
			for _, r := range person.Contacts {
				ids = append(ids, r.ID)
			}
			return person, ids, err
		},
		Delete: ps.ErasePerson,
		Found:  func(ids []int64) privacyapi.Found { return privacyapi.Found{ContactIDs: ids} },
	}, nil
}
