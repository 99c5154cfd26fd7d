package contacts

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/fault"
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

// PersonErasure is what an erasure did: the contacts it deleted and how
// many notes, tasks and history entries went with them, the other
// contacts whose custom fields it cleared of the address, and how many
// relayed events it redacted.
type PersonErasure struct {
	ContactIDs []int64
	Cleared    []int64
	Notes      int64
	Tasks      int64
	History    int64
	Events     int64
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
	ErasePerson(ctx context.Context, tx pgx.Tx, email string) (PersonErasure, error)
}

// Privacy is the contacts context's part of the privacy requests
// (pkg/privacy.Part).
type Privacy struct{ store PersonStore }

// Privacy is the service's part of the privacy requests; it fails when
// the service's store keeps no person (none but the PostgreSQL store
// does).
func (s *Service) Privacy() (*Privacy, error) {
	ps, ok := s.store.(PersonStore)
	if !ok {
		return nil, errors.New("contacts: the store serves no privacy requests")
	}
	return &Privacy{store: ps}, nil
}

// address is the subject's address, refused when empty (the edge has
// refused it already).
func address(s privacyapi.Subject) (string, error) {
	email := strings.TrimSpace(s.Email)
	if email == "" {
		return "", fault.Invalid("email", "is required")
	}
	return email, nil
}

// Export answers what the context holds about the subject, and the
// person's contact ids for the later phases.
func (p *Privacy) Export(ctx context.Context, s privacyapi.Subject) (privacyapi.ExportPart, error) {
	email, err := address(s)
	if err != nil {
		return privacyapi.ExportPart{}, err
	}
	person, err := p.store.Person(ctx, email)
	if err != nil {
		return privacyapi.ExportPart{}, err
	}
	data, err := json.Marshal(person)
	if err != nil {
		return privacyapi.ExportPart{}, err
	}
	var ids []int64
	for _, c := range person.Contacts {
		ids = append(ids, c.ID)
	}
	return privacyapi.ExportPart{Found: privacyapi.Found{ContactIDs: ids}, Data: data}, nil
}

// Erase deletes the subject's contacts with their notes and tasks, clears
// the address from other contacts and redacts the history inside tx, and
// answers the receipt: erased contacts, notes and tasks; redacted (other)
// contacts, history entries and events.
func (p *Privacy) Erase(ctx context.Context, tx pgx.Tx, s privacyapi.Subject) (privacyapi.ErasePart, error) {
	email, err := address(s)
	if err != nil {
		return privacyapi.ErasePart{}, err
	}
	done, err := p.store.ErasePerson(ctx, tx, email)
	if err != nil {
		return privacyapi.ErasePart{}, err
	}
	return privacyapi.ErasePart{
		Found: privacyapi.Found{ContactIDs: done.ContactIDs},
		Receipt: privacyapi.Receipt{
			Erased:   map[string]int64{"contacts": int64(len(done.ContactIDs)), "notes": done.Notes, "tasks": done.Tasks},
			Redacted: map[string]int64{"contacts": int64(len(done.Cleared)), "history": done.History, "events": done.Events},
		},
	}, nil
}
