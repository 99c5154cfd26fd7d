package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/privacy"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

var _ leads.PersonStore = (*Store)(nil)

// personWhere selects the person's leads: email equal to $1 ignoring
// case, on the (lower(email), id) index.
const personWhere = `lower(email) = lower($1)`

// personRecords are the leads as a person's records: their history, notes
// and tasks, custom fields, and the relayed events that carry a lead
// (every type but lead.deleted).
var personRecords = privacy.Records{Object: activity.Lead, Table: "leads", Property: propertyapi.Leads,
	Stream: leads.Stream, Types: []string{leads.EventCreated, leads.EventUpdated, leads.EventQualified, leads.EventDisqualified}}

// Person reads the person's leads (rendered as the API reads them), their
// notes, tasks and history (and the history of the person's leads
// deleted before), and the other leads' custom fields holding the
// address, in one snapshot.
func (s *Store) Person(ctx context.Context, email string) (leads.Person, error) {
	var p leads.Person
	snapshot := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	err := pgx.BeginTxFunc(ctx, s.db.Pool, snapshot, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+Columns+` FROM leads WHERE `+personWhere+` ORDER BY id`, email)
		if err != nil {
			return err
		}
		if p.Leads, err = pgx.CollectRows(rows, Scan); err != nil {
			return err
		}
		defs, err := definitions(ctx, tx)
		if err != nil {
			return err
		}
		ids := make([]int64, len(p.Leads))
		for i := range p.Leads {
			render(defs, &p.Leads[i])
			ids[i] = p.Leads[i].ID
		}
		if p.Leads == nil {
			p.Leads = []leads.Lead{}
		}
		p.Notes, err = privacy.Notes(ctx, tx, personRecords, ids, func(id int64, n contactsapi.Note) leads.PersonNote {
			return leads.PersonNote{LeadID: id, Note: n}
		})
		if err != nil {
			return err
		}
		around, err := personRecords.Around(ctx, tx, defs, email, ids)
		if err != nil {
			return err
		}
		p.Tasks, p.History = around.Tasks, around.History
		p.CustomFieldValues = make([]leads.HeldValue, len(around.Held))
		for i, h := range around.Held {
			p.CustomFieldValues[i] = leads.HeldValue{LeadID: h.RecordID, Field: h.Field}
		}
		return nil
	})
	if err != nil {
		return leads.Person{}, fmt.Errorf("person's leads: %w", err)
	}
	return p, nil
}

// ErasePerson deletes the person's leads inside tx, each as a delete does
// (its notes and tasks, its qualification progress by cascade, its unique
// custom values, lead.deleted carrying the id alone and the audit log's
// record.deleted; the counts and cubes follow by trigger), and clears the
// address from other leads' custom fields of type email, publishing their
// lead.updated. It then redacts the history of the person's leads,
// present and deleted before, the address wherever else the history holds
// it, and the relayed events that carry either (privacy.Records.Erase).
func (s *Store) ErasePerson(ctx context.Context, tx pgx.Tx, email string) (privacy.Erasure, error) {
	// The definitions first, as every write takes them before its rows.
	defs, err := hold(ctx, tx)
	if err != nil {
		return privacy.Erasure{}, err
	}
	rows, err := tx.Query(ctx, `SELECT id FROM leads WHERE `+personWhere+` ORDER BY id FOR UPDATE`, email)
	if err != nil {
		return privacy.Erasure{}, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return privacy.Erasure{}, err
	}
	del := func(id int64) error { return remove(ctx, tx, id) }
	// clear removes the fields' values from a lead (a value an erasure
	// takes away, even of a required field) and publishes its lead.updated.
	clear := func(id int64, fields []string) error {
		l, err := one(ctx, tx, "clear lead values", `UPDATE leads SET custom_fields = custom_fields - $2::text[], updated_at = now()
			WHERE id = $1 RETURNING `+Columns, id, fields)
		if err != nil {
			return err
		}
		render(defs, &l)
		return event(ctx, tx, leads.EventUpdated, l)
	}
	done, err := personRecords.Erase(ctx, tx, defs, email, ids, del, clear)
	return done, err
}
