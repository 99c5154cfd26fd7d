package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

var _ leads.PersonStore = (*Store)(nil)

// personWhere selects the person's leads: email equal to $1 ignoring
// case, on the (lower(email), id) index.
const personWhere = `lower(email) = lower($1)`

// historyPage is how many history entries one read of a lead's history
// takes while an export gathers all of them.
const historyPage = 500

// Person reads the person's leads (rendered as the API reads them), their
// notes, tasks and history, in one snapshot.
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
		return leads.Person{}, fmt.Errorf("person's leads: %w", err)
	}
	return p, nil
}

// personNotes are the notes of leads ids, by lead then creation.
func personNotes(ctx context.Context, q db.Querier, ids []int64) ([]leads.PersonNote, error) {
	rows, err := q.Query(ctx, `SELECT parent_id, id, content, created_by, created_at, updated_at FROM notes
		WHERE parent_type = $1 AND parent_id = ANY($2) ORDER BY parent_id, created_at, id`, activity.Lead, ids)
	if err != nil {
		return nil, err
	}
	notes, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (leads.PersonNote, error) {
		var n leads.PersonNote
		err := row.Scan(&n.LeadID, &n.ID, &n.Content, &n.CreatedBy, &n.CreatedAt, &n.UpdatedAt)
		return n, err
	})
	if notes == nil {
		notes = []leads.PersonNote{}
	}
	return notes, err
}

// personTasks are the tasks of leads ids, by lead then id (the columns
// pkg/activity reads).
func personTasks(ctx context.Context, q db.Querier, ids []int64) ([]contactsapi.Task, error) {
	rows, err := q.Query(ctx, `SELECT id, title, description, to_char(due_date, 'YYYY-MM-DD'), due_time, priority, status,
			completed_at, assigned_to, contact_id, company_id, deal_id, lead_id, contract_id, created_by, created_at, updated_at
		FROM tasks WHERE parent_type = $1 AND parent_id = ANY($2) ORDER BY parent_id, id`, activity.Lead, ids)
	if err != nil {
		return nil, err
	}
	tasks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (contactsapi.Task, error) {
		var t contactsapi.Task
		err := row.Scan(&t.ID, &t.Title, &t.Description, &t.DueDate, &t.DueTime, &t.Priority, &t.Status,
			&t.CompletedAt, &t.AssignedTo, &t.ContactID, &t.CompanyID, &t.DealID, &t.LeadID, &t.ContractID,
			&t.CreatedBy, &t.CreatedAt, &t.UpdatedAt)
		return t, err
	})
	if tasks == nil {
		tasks = []contactsapi.Task{}
	}
	return tasks, err
}

// personHistory is the whole history of leads ids (their notes' and
// tasks' included), by lead, newest first.
func personHistory(ctx context.Context, q db.Querier, ids []int64) ([]historyapi.HistoryEntry, error) {
	out := []historyapi.HistoryEntry{}
	for _, id := range ids {
		page := history.Query{PerPage: historyPage}
		for {
			entries, more, err := history.List(ctx, q, "lead", id, page)
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

// ErasePerson deletes the person's leads inside tx, each as a delete does
// (its notes and tasks, its qualification progress by cascade, its unique
// custom values, lead.deleted carrying the id alone and the audit log's
// record.deleted; the counts and cubes follow by trigger), then redacts
// their history (the deletes' entries included) and the events about
// them the outbox still keeps after relaying them.
func (s *Store) ErasePerson(ctx context.Context, tx pgx.Tx, email string) (leads.PersonErasure, error) {
	var done leads.PersonErasure
	rows, err := tx.Query(ctx, `SELECT id FROM leads WHERE `+personWhere+` ORDER BY id FOR UPDATE`, email)
	if err != nil {
		return done, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) == 0 {
		return done, err
	}
	done.LeadIDs = ids
	if err := tx.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM notes WHERE parent_type = $1 AND parent_id = ANY($2)),
			(SELECT count(*) FROM tasks WHERE parent_type = $1 AND parent_id = ANY($2))`,
		activity.Lead, ids).Scan(&done.Notes, &done.Tasks); err != nil {
		return done, err
	}
	for _, id := range ids {
		if err := remove(ctx, tx, id); err != nil {
			return done, err
		}
	}
	if done.History, err = history.Redact(ctx, tx, "lead", ids); err != nil {
		return done, err
	}
	done.Events, err = redactEvents(ctx, tx, ids)
	return done, err
}

// redactEvents replaces the data of the relayed events of leads ids that
// carry the lead (every type but lead.deleted) and that the outbox keeps
// (until its retention) with the id alone; events not yet relayed go out
// as they are, to the events feed an erasure redacts afterwards.
func redactEvents(ctx context.Context, tx pgx.Tx, ids []int64) (int64, error) {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = strconv.FormatInt(id, 10)
	}
	tag, err := tx.Exec(ctx, `UPDATE outbox SET payload = json_build_object('id', aggregate_id::bigint)
		WHERE stream = $1 AND type = ANY($2) AND aggregate_id = ANY($3) AND published_at IS NOT NULL`,
		leads.Stream, []string{leads.EventCreated, leads.EventUpdated, leads.EventQualified, leads.EventDisqualified}, keys)
	if err != nil {
		return 0, fmt.Errorf("redact events: %w", err)
	}
	return tag.RowsAffected(), nil
}
