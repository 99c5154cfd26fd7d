package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/privacy"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

var _ contacts.PersonStore = (*Store)(nil)

// personWhere selects the person's contacts: email equal to $1 ignoring
// case, on the lower(email) index (anyStatus lets the planner use the
// status-led indexes too, as ContactsByEmail does).
const personWhere = `lower(email) = lower($1) AND ` + anyStatus

// personRecords are the contacts as a person's records: their history,
// notes and tasks, custom fields, and the relayed contact.created and
// contact.updated events that carry them.
var personRecords = privacy.Records{Object: activity.Contact, Table: "contacts", Property: propertyapi.Contacts,
	Stream: Stream, Types: []string{contacts.ContactCreated, contacts.ContactUpdated}}

// Person reads the person's contacts (rendered as the API reads them),
// their notes, tasks and history (and the history of the person's
// contacts deleted before), and the other contacts' custom fields holding
// the address, in one snapshot.
func (s *Store) Person(ctx context.Context, email string) (contacts.Person, error) {
	var p contacts.Person
	snapshot := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err := pgx.BeginTxFunc(ctx, s.db.Pool, snapshot, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+contactCols+` FROM contacts WHERE `+personWhere+` ORDER BY id`, email)
		if err != nil {
			return err
		}
		if p.Contacts, err = collect(rows, scanContact); err != nil {
			return err
		}
		values := make([]*map[string]any, len(p.Contacts))
		ids := make([]int64, len(p.Contacts))
		for i := range p.Contacts {
			values[i], ids[i] = &p.Contacts[i].CustomFields, p.Contacts[i].ID
		}
		if err := renderIn(ctx, tx, propertyapi.Contacts, values...); err != nil {
			return err
		}
		p.Notes, err = privacy.Notes(ctx, tx, personRecords, ids, func(id int64, n contactsapi.Note) contacts.PersonNote {
			return contacts.PersonNote{ContactID: id, Note: n}
		})
		if err != nil {
			return err
		}
		defs, err := customfield.Definitions(ctx, tx, propertyapi.Contacts)
		if err != nil {
			return err
		}
		around, err := personRecords.Around(ctx, tx, defs, email, ids)
		if err != nil {
			return err
		}
		p.Tasks, p.History = around.Tasks, around.History
		p.CustomFieldValues = make([]contacts.HeldValue, len(around.Held))
		for i, h := range around.Held {
			p.CustomFieldValues[i] = contacts.HeldValue{ContactID: h.RecordID, Field: h.Field}
		}
		return nil
	})
	if err != nil {
		return contacts.Person{}, fmt.Errorf("person's contacts: %w", err)
	}
	return p, nil
}

// ErasePerson deletes the person's contacts inside tx, each as a delete
// does (its notes and tasks, its unique custom values, contact.deleted
// carrying the id alone; the counts and cubes follow by trigger), and
// clears the address from other contacts' custom fields of type email,
// publishing their contact.updated. It then redacts the history of the
// person's contacts, present and deleted before, the address wherever
// else the history holds it, and the relayed events that carry either
// (privacy.Records.Erase).
func (s *Store) ErasePerson(ctx context.Context, tx pgx.Tx, email string) (privacy.Erasure, error) {
	// The definitions first, as every write takes them before its rows.
	defs, err := hold(ctx, tx, propertyapi.Contacts)
	if err != nil {
		return privacy.Erasure{}, err
	}
	rows, err := tx.Query(ctx, `SELECT id FROM contacts WHERE `+personWhere+` ORDER BY id FOR UPDATE`, email)
	if err != nil {
		return privacy.Erasure{}, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return privacy.Erasure{}, err
	}
	remove := func(id int64) error { return deleteContact(ctx, tx, id) }
	// clear removes the fields' values from a contact (a value an erasure
	// takes away, even of a required field) and publishes its
	// contact.updated.
	clear := func(id int64, fields []string) error {
		c, err := one(tx, ctx, scanContact, "contact", `UPDATE contacts SET custom_fields = custom_fields - $2::text[], updated_at = now()
			WHERE id = $1 RETURNING `+contactCols, id, fields)
		if err != nil {
			return err
		}
		c.CustomFields = customfield.Render(defs, c.CustomFields)
		return outbox.Add(ctx, tx, Stream, contacts.ContactUpdated, idStr(id), c)
	}
	done, err := personRecords.Erase(ctx, tx, defs, email, ids, remove, clear)
	if err != nil {
		return privacy.Erasure{}, err
	}
	// A running merge keeps the addresses it hands mail until it
	// completes: the person's leaves with them.
	if _, err := tx.Exec(ctx, `UPDATE merges SET emails = array_remove(emails, lower($1)) WHERE lower($1) = ANY(emails)`, email); err != nil {
		return privacy.Erasure{}, err
	}
	return done, err
}
