package leads

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

// PersonErasure is what an erasure did: the leads it deleted and how many
// notes, tasks and history entries went with them, the other leads whose
// custom fields it cleared of the address, and how many relayed events it
// redacted.
type PersonErasure struct {
	LeadIDs []int64
	Cleared []int64
	Notes   int64
	Tasks   int64
	History int64
	Events  int64
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
	ErasePerson(ctx context.Context, tx pgx.Tx, email string) (PersonErasure, error)
}

// Privacy is the leads context's part of the privacy requests
// (pkg/privacy.Part).
type Privacy struct{ store PersonStore }

// Privacy is the service's part of the privacy requests; it fails when
// the service's store keeps no person (none but the PostgreSQL store
// does).
func (s *Service) Privacy() (*Privacy, error) {
	ps, ok := s.store.(PersonStore)
	if !ok {
		return nil, errors.New("leads: the store serves no privacy requests")
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
// person's lead ids for the later phases.
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
	for _, l := range person.Leads {
		ids = append(ids, l.ID)
	}
	return privacyapi.ExportPart{Found: privacyapi.Found{LeadIDs: ids}, Data: data}, nil
}

// Erase deletes the subject's leads with their notes and tasks, clears the
// address from other leads and redacts the history inside tx, and answers
// the receipt: erased leads, notes and tasks; redacted (other) leads,
// history entries and events.
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
		Found: privacyapi.Found{LeadIDs: done.LeadIDs},
		Receipt: privacyapi.Receipt{
			Erased:   map[string]int64{"leads": int64(len(done.LeadIDs)), "notes": done.Notes, "tasks": done.Tasks},
			Redacted: map[string]int64{"leads": int64(len(done.Cleared)), "history": done.History, "events": done.Events},
		},
	}, nil
}
