package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
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
		if p.Notes, err = personNotes(ctx, tx, ids); err != nil {
			return err
		}
		if p.Tasks, err = personTasks(ctx, tx, ids); err != nil {
			return err
		}
		past, err := pastLeads(ctx, tx, email, ids)
		if err != nil {
			return err
		}
		if p.History, err = personHistory(ctx, tx, append(slices.Clone(ids), past...)); err != nil {
			return err
		}
		p.CustomFieldValues, err = heldValues(ctx, tx, defs, email, ids, "")
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
// record.deleted; the counts and cubes follow by trigger), and clears the
// address from other leads' custom fields of type email. It then redacts
// the history of the person's leads, present and deleted before (the
// deletes' entries included), the address wherever else the history holds
// it (a lead's email changed since, another lead's custom field), and the
// relayed events that carry either.
func (s *Store) ErasePerson(ctx context.Context, tx pgx.Tx, email string) (leads.PersonErasure, error) {
	var done leads.PersonErasure
	// The definitions first, as every write takes them before its rows.
	defs, err := hold(ctx, tx)
	if err != nil {
		return done, err
	}
	rows, err := tx.Query(ctx, `SELECT id FROM leads WHERE `+personWhere+` ORDER BY id FOR UPDATE`, email)
	if err != nil {
		return done, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return done, err
	}
	past, err := pastLeads(ctx, tx, email, ids)
	if err != nil {
		return done, err
	}
	held, err := heldValues(ctx, tx, defs, email, ids, ` FOR NO KEY UPDATE`)
	if err != nil {
		return done, err
	}
	if done.Cleared, err = clearValues(ctx, tx, defs, held); err != nil {
		return done, err
	}
	if len(ids) > 0 {
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
	}
	if done.History, err = history.Redact(ctx, tx, "lead", append(slices.Clone(ids), past...)); err != nil {
		return done, err
	}
	values, err := redactValues(ctx, tx, email, held)
	if err != nil {
		return done, err
	}
	done.History += values
	done.Events, err = redactEvents(ctx, tx, ids, email)
	return done, err
}

// pastLeads are the leads deleted before, not among ids, whose deletion
// the history recorded with the address as their email: the person's
// leads of the past, whose history outlives them (until its retention).
// No index answers it: it reads the history table, once per erasure or
// export.
func pastLeads(ctx context.Context, q db.Querier, email string, ids []int64) ([]int64, error) {
	rows, err := q.Query(ctx, `SELECT DISTINCT record_id FROM history
		WHERE object = 'lead' AND action = 'deleted' AND lower(before ->> 'email') = lower($1)
			AND record_id <> ALL(coalesce($2::bigint[], '{}'))
		ORDER BY record_id`, email, ids)
	if err != nil {
		return nil, fmt.Errorf("past leads: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// redactEvents replaces the data of the relayed events that carry a lead
// (every type but lead.deleted) that the outbox keeps (until its
// retention) of the person's leads ids, and of any lead carrying the
// address (as its email or in a custom field), with the id alone; events
// not yet relayed go out as they are, to the events feed an erasure
// redacts afterwards. No index answers the address: it reads the outbox.
func redactEvents(ctx context.Context, tx pgx.Tx, ids []int64, email string) (int64, error) {
	quoted, err := json.Marshal(emailValue(email))
	if err != nil {
		return 0, err
	}
	tag, err := tx.Exec(ctx, `UPDATE outbox SET payload = json_build_object('id', aggregate_id::bigint)
		WHERE stream = $1 AND type = ANY($2) AND published_at IS NOT NULL
			AND (aggregate_id = ANY($3) OR strpos(lower(payload::text), $4) > 0)`,
		leads.Stream, []string{leads.EventCreated, leads.EventUpdated, leads.EventQualified, leads.EventDisqualified},
		idStrs(ids), string(quoted))
	if err != nil {
		return 0, fmt.Errorf("redact events: %w", err)
	}
	return tag.RowsAffected(), nil
}

func idStrs(ids []int64) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strconv.FormatInt(id, 10)
	}
	return out
}

// emailValue is the address as a custom field of type email holds it
// (customfield stores those lower-cased and trimmed).
func emailValue(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// heldValues are the custom fields of type email (among defs) holding the
// address on leads other than ids (the person's), by lead and field; lock
// locks their rows or is "".
func heldValues(ctx context.Context, q db.Querier, defs []customfield.Definition, email string, ids []int64,
	lock string) ([]leads.HeldValue, error) {
	var names []string
	for _, d := range defs {
		if d.Type == customfield.Email {
			names = append(names, d.Name)
		}
	}
	out := []leads.HeldValue{}
	if len(names) == 0 {
		return out, nil
	}
	value := emailValue(email)
	objects := make([]string, len(names))
	for i, n := range names {
		raw, err := json.Marshal(map[string]string{n: value})
		if err != nil {
			return nil, err
		}
		objects[i] = string(raw)
	}
	// No index answers this: it reads the table, once per erasure or
	// export, and only where leads have custom fields of type email.
	rows, err := q.Query(ctx, `SELECT id, custom_fields FROM leads
		WHERE custom_fields @> ANY($1::text[]::jsonb[]) AND id <> ALL(coalesce($2::bigint[], '{}')) ORDER BY id`+lock, objects, ids)
	if err != nil {
		return nil, err
	}
	type row struct {
		ID     int64
		Values map[string]any
	}
	found, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		return nil, err
	}
	for _, r := range found {
		for _, n := range names {
			if v, ok := r.Values[n].(string); ok && v == value {
				out = append(out, leads.HeldValue{LeadID: r.ID, Field: n})
			}
		}
	}
	return out, nil
}

// clearValues removes the held values from their leads (a value an
// erasure takes away, even of a required field), releases them where
// unique and publishes each lead's lead.updated; it answers the leads
// changed.
func clearValues(ctx context.Context, tx pgx.Tx, defs []customfield.Definition, held []leads.HeldValue) ([]int64, error) {
	var ids []int64
	fields := map[int64][]string{}
	for _, h := range held {
		if fields[h.LeadID] == nil {
			ids = append(ids, h.LeadID)
		}
		fields[h.LeadID] = append(fields[h.LeadID], h.Field)
	}
	for _, id := range ids {
		l, err := one(ctx, tx, "clear lead values", `UPDATE leads SET custom_fields = custom_fields - $2::text[], updated_at = now()
			WHERE id = $1 RETURNING `+Columns, id, fields[id])
		if err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM custom_field_unique WHERE object = $1 AND record_id = $2 AND name = ANY($3)`,
			propertyapi.Leads, id, fields[id]); err != nil {
			return nil, err
		}
		render(defs, &l)
		if err := event(ctx, tx, leads.EventUpdated, l); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// redactValues replaces the address in the history of leads the erasure
// keeps with "[erased]": where it was a lead's email (changed since) and
// in the held custom fields, before and after; the rest of their history
// stays. It answers the entries changed.
func redactValues(ctx context.Context, tx pgx.Tx, email string, held []leads.HeldValue) (int64, error) {
	changed := map[int64]bool{}
	collect := func(rows pgx.Rows, err error) error {
		if err != nil {
			return fmt.Errorf("redact history values: %w", err)
		}
		entries, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("redact history values: %w", err)
		}
		for _, e := range entries {
			changed[e] = true
		}
		return nil
	}
	if err := collect(tx.Query(ctx, `UPDATE history SET
			before = CASE WHEN lower(before ->> 'email') = lower($1)
				THEN jsonb_set(before, '{email}', to_jsonb($2::text)) ELSE before END,
			after = CASE WHEN lower(after ->> 'email') = lower($1)
				THEN jsonb_set(after, '{email}', to_jsonb($2::text)) ELSE after END
		WHERE object = 'lead' AND (lower(before ->> 'email') = lower($1) OR lower(after ->> 'email') = lower($1))
		RETURNING id`, email, history.Erased)); err != nil {
		return 0, err
	}
	for _, h := range held {
		if err := collect(tx.Query(ctx, `UPDATE history SET
				before = CASE WHEN before -> 'custom_fields' ->> $2 = $3
					THEN jsonb_set(before, ARRAY['custom_fields', $2], to_jsonb($4::text)) ELSE before END,
				after = CASE WHEN after -> 'custom_fields' ->> $2 = $3
					THEN jsonb_set(after, ARRAY['custom_fields', $2], to_jsonb($4::text)) ELSE after END
			WHERE object = 'lead' AND record_id = $1
				AND (before -> 'custom_fields' ->> $2 = $3 OR after -> 'custom_fields' ->> $2 = $3)
			RETURNING id`, h.LeadID, h.Field, emailValue(email), history.Erased)); err != nil {
			return 0, err
		}
	}
	return int64(len(changed)), nil
}
