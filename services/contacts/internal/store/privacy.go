package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

var _ contacts.PersonStore = (*Store)(nil)

// personWhere selects the person's contacts: email equal to $1 ignoring
// case, on the lower(email) index (anyStatus lets the planner use the
// status-led indexes too, as ContactsByEmail does).
const personWhere = `lower(email) = lower($1) AND ` + anyStatus

// historyPage is how many history entries one read of a contact's history
// takes while an export gathers all of them.
const historyPage = 500

// Person reads the person's contacts (rendered as the API reads them),
// their notes, tasks and history, in one snapshot.
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
		if p.Notes, err = personNotes(ctx, tx, ids); err != nil {
			return err
		}
		if p.Tasks, err = personTasks(ctx, tx, ids); err != nil {
			return err
		}
		p.History, err = personHistory(ctx, tx, ids)
		return err
	})
	if err != nil {
		return contacts.Person{}, fmt.Errorf("person's contacts: %w", err)
	}
	return p, nil
}

// personNotes are the notes of contacts ids, by contact then creation.
func personNotes(ctx context.Context, q db.Querier, ids []int64) ([]contacts.PersonNote, error) {
	rows, err := q.Query(ctx, `SELECT parent_id, id, content, created_by, created_at, updated_at FROM notes
		WHERE parent_type = $1 AND parent_id = ANY($2) ORDER BY parent_id, created_at, id`, activity.Contact, ids)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(row pgx.CollectableRow) (contacts.PersonNote, error) {
		var n contacts.PersonNote
		err := row.Scan(&n.ContactID, &n.ID, &n.Content, &n.CreatedBy, &n.CreatedAt, &n.UpdatedAt)
		return n, err
	})
}

// personTasks are the tasks of contacts ids, by contact then id (the
// columns pkg/activity reads).
func personTasks(ctx context.Context, q db.Querier, ids []int64) ([]contactsapi.Task, error) {
	rows, err := q.Query(ctx, `SELECT id, title, description, to_char(due_date, 'YYYY-MM-DD'), due_time, priority, status,
			completed_at, assigned_to, contact_id, company_id, deal_id, lead_id, contract_id, created_by, created_at, updated_at
		FROM tasks WHERE parent_type = $1 AND parent_id = ANY($2) ORDER BY parent_id, id`, activity.Contact, ids)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(row pgx.CollectableRow) (contactsapi.Task, error) {
		var t contactsapi.Task
		err := row.Scan(&t.ID, &t.Title, &t.Description, &t.DueDate, &t.DueTime, &t.Priority, &t.Status,
			&t.CompletedAt, &t.AssignedTo, &t.ContactID, &t.CompanyID, &t.DealID, &t.LeadID, &t.ContractID,
			&t.CreatedBy, &t.CreatedAt, &t.UpdatedAt)
		return t, err
	})
}

// personHistory is the whole history of contacts ids (their notes' and
// tasks' included), by contact, newest first.
func personHistory(ctx context.Context, q db.Querier, ids []int64) ([]historyapi.HistoryEntry, error) {
	out := []historyapi.HistoryEntry{}
	for _, id := range ids {
		page := history.Query{PerPage: historyPage}
		for {
			entries, more, err := history.List(ctx, q, "contact", id, page)
			if err != nil {
				return nil, err
			}
			out = append(out, entries...)
			if !more {
				break
			}
			last := entries[len(entries)-1].ID
			page.Before = &last
		}
	}
	return out, nil
}

// ErasePerson deletes the person's contacts inside tx, each as a delete
// does (its notes and tasks, its unique custom values, contact.deleted
// carrying the id alone; the counts and cubes follow by trigger), then
// redacts their history (the deletes' entries included) and the events
// about them the outbox still keeps after relaying them.
func (s *Store) ErasePerson(ctx context.Context, tx pgx.Tx, email string) (contacts.PersonErasure, error) {
	var done contacts.PersonErasure
	rows, err := tx.Query(ctx, `SELECT id FROM contacts WHERE `+personWhere+` ORDER BY id FOR UPDATE`, email)
	if err != nil {
		return done, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) == 0 {
		return done, err
	}
	done.ContactIDs = ids
	if err := tx.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM notes WHERE parent_type = $1 AND parent_id = ANY($2)),
			(SELECT count(*) FROM tasks WHERE parent_type = $1 AND parent_id = ANY($2))`,
		activity.Contact, ids).Scan(&done.Notes, &done.Tasks); err != nil {
		return done, err
	}
	for _, id := range ids {
		if err := deleteContact(ctx, tx, id); err != nil {
			return done, err
		}
	}
	if done.History, err = history.Redact(ctx, tx, "contact", ids); err != nil {
		return done, err
	}
	done.Events, err = redactEvents(ctx, tx, ids)
	return done, err
}

// redactEvents replaces the data of the relayed contact.created and
// contact.updated events of contacts ids that the outbox keeps (until its
// retention) with the id alone; events not yet relayed go out as they
// are, to the events feed an erasure redacts afterwards.
func redactEvents(ctx context.Context, tx pgx.Tx, ids []int64) (int64, error) {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = idStr(id)
	}
	tag, err := tx.Exec(ctx, `UPDATE outbox SET payload = json_build_object('id', aggregate_id::bigint)
		WHERE stream = $1 AND type = ANY($2) AND aggregate_id = ANY($3) AND published_at IS NOT NULL`,
		Stream, []string{contacts.ContactCreated, contacts.ContactUpdated}, keys)
	if err != nil {
		return 0, fmt.Errorf("redact events: %w", err)
	}
	return tag.RowsAffected(), nil
}
