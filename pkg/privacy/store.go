package privacy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/history"
)

// Records are a context's records that are a person's by their email
// column (contacts, leads): the reads and redactions their exports and
// erasures share. The context keeps what differs (how a record is read,
// deleted and published) and its own rules of what an erasure takes.
type Records struct {
	// Object names the records in history and as the parent of notes and
	// tasks ("contact", "lead").
	Object string
	// Table is the records' table, with email and custom_fields columns
	// (trusted code, never input).
	Table string
	// Property is the records' custom-field object (propertyapi.Contacts).
	Property string
	// Stream and Types are the outbox stream and the types of its events
	// whose data carry a record.
	Stream string
	Types  []string
}

// Held is a custom field of type email of a record other than the
// person's that holds the person's address.
type Held struct {
	RecordID int64
	Field    string
}

// historyPage is how many history entries one read of a record's history
// takes while an export gathers all of them.
const historyPage = 500

// lockHeld is the lock an erasure takes on the records holding the
// address, the lock a write of a record takes.
const lockHeld = ` FOR NO KEY UPDATE`

// EmailValue is the address as a custom field of type email holds it
// (customfield stores those lower-cased and trimmed).
func EmailValue(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// Notes are the notes of records ids, by record then creation, each made
// by with from its record's id; none is an empty list.
func Notes[N any](ctx context.Context, q db.Querier, r Records, ids []int64,
	with func(recordID int64, n contactsapi.Note) N) ([]N, error) {
	rows, err := q.Query(ctx, `SELECT parent_id, id, content, created_by, created_at, updated_at FROM notes
		WHERE parent_type = $1 AND parent_id = ANY($2) ORDER BY parent_id, created_at, id`, r.Object, ids)
	if err != nil {
		return nil, err
	}
	out := []N{}
	for rows.Next() {
		var (
			parent int64
			n      contactsapi.Note
		)
		if err := rows.Scan(&parent, &n.ID, &n.Content, &n.CreatedBy, &n.CreatedAt, &n.UpdatedAt); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, with(parent, n))
	}
	return out, rows.Err()
}

// Tasks are the tasks of records ids, by record then id (the columns
// pkg/activity reads); none is an empty list.
func (r Records) Tasks(ctx context.Context, q db.Querier, ids []int64) ([]contactsapi.Task, error) {
	rows, err := q.Query(ctx, `SELECT id, title, description, to_char(due_date, 'YYYY-MM-DD'), due_time, priority, status,
			completed_at, assigned_to, contact_id, company_id, deal_id, lead_id, contract_id, created_by, created_at, updated_at
		FROM tasks WHERE parent_type = $1 AND parent_id = ANY($2) ORDER BY parent_id, id`, r.Object, ids)
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

// Activities counts the notes and tasks of records ids.
func (r Records) Activities(ctx context.Context, q db.Querier, ids []int64) (notes, tasks int64, err error) {
	err = q.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM notes WHERE parent_type = $1 AND parent_id = ANY($2)),
			(SELECT count(*) FROM tasks WHERE parent_type = $1 AND parent_id = ANY($2))`,
		r.Object, ids).Scan(&notes, &tasks)
	return notes, tasks, err
}

// History is the whole history of records ids (their notes' and tasks'
// included), by record, newest first.
func (r Records) History(ctx context.Context, q db.Querier, ids []int64) ([]historyapi.HistoryEntry, error) {
	out := []historyapi.HistoryEntry{}
	for _, id := range ids {
		page := history.Query{PerPage: historyPage}
		for {
			entries, more, err := history.List(ctx, q, r.Object, id, page)
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

// Past are the records deleted before, not among ids, whose deletion the
// history recorded with the address as their email: the person's records
// of the past, whose history outlives them (until its retention). No
// index answers it: it reads the history table, once per erasure or
// export.
func (r Records) Past(ctx context.Context, q db.Querier, email string, ids []int64) ([]int64, error) {
	rows, err := q.Query(ctx, `SELECT DISTINCT record_id FROM history
		WHERE object = $3 AND action = 'deleted' AND lower(before ->> 'email') = lower($1)
			AND record_id <> ALL(coalesce($2::bigint[], '{}'))
		ORDER BY record_id`, email, ids, r.Object)
	if err != nil {
		return nil, fmt.Errorf("past %s: %w", r.Table, err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// Held are the custom fields of type email (among defs) holding the
// address on records other than ids (the person's), by record and field;
// lock locks their rows as a write does. None is an empty list.
func (r Records) Held(ctx context.Context, q db.Querier, defs []customfield.Definition, email string, ids []int64,
	lock bool) ([]Held, error) {
	var names []string
	for _, d := range defs {
		if d.Type == customfield.Email {
			names = append(names, d.Name)
		}
	}
	out := []Held{}
	if len(names) == 0 {
		return out, nil
	}
	value := EmailValue(email)
	objects := make([]string, len(names))
	for i, n := range names {
		raw, err := json.Marshal(map[string]string{n: value})
		if err != nil {
			return nil, err
		}
		objects[i] = string(raw)
	}
	locking := ""
	if lock {
		locking = lockHeld
	}
	// No index answers this: it reads the table, once per erasure or
	// export, and only where records have custom fields of type email.
	rows, err := q.Query(ctx, `SELECT id, custom_fields FROM `+pgx.Identifier{r.Table}.Sanitize()+`
		WHERE custom_fields @> ANY($1::text[]::jsonb[]) AND id <> ALL(coalesce($2::bigint[], '{}')) ORDER BY id`+locking,
		objects, ids)
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
	for _, f := range found {
		for _, n := range names {
			if v, ok := f.Values[n].(string); ok && v == value {
				out = append(out, Held{RecordID: f.ID, Field: n})
			}
		}
	}
	return out, nil
}

// Clear takes the held values away from their records (a value an
// erasure takes away, even of a required field): clear removes a
// record's fields and publishes its change, as the context writes it;
// then their unique claims are released. It answers the records changed,
// in the order held names them first.
func (r Records) Clear(ctx context.Context, tx pgx.Tx, held []Held, clear func(id int64, fields []string) error) ([]int64, error) {
	var ids []int64
	fields := map[int64][]string{}
	for _, h := range held {
		if fields[h.RecordID] == nil {
			ids = append(ids, h.RecordID)
		}
		fields[h.RecordID] = append(fields[h.RecordID], h.Field)
	}
	for _, id := range ids {
		if err := clear(id, fields[id]); err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM custom_field_unique WHERE object = $1 AND record_id = $2 AND name = ANY($3)`,
			r.Property, id, fields[id]); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// RedactValues replaces the address in the history of records the
// erasure keeps with history.Erased: where it was a record's email
// (changed since) and in the held custom fields, before and after; the
// rest of their history stays. It answers the entries changed.
func (r Records) RedactValues(ctx context.Context, tx pgx.Tx, email string, held []Held) (int64, error) {
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
		WHERE object = $3 AND (lower(before ->> 'email') = lower($1) OR lower(after ->> 'email') = lower($1))
		RETURNING id`, email, history.Erased, r.Object)); err != nil {
		return 0, err
	}
	for _, h := range held {
		if err := collect(tx.Query(ctx, `UPDATE history SET
				before = CASE WHEN before -> 'custom_fields' ->> $2 = $3
					THEN jsonb_set(before, ARRAY['custom_fields', $2], to_jsonb($4::text)) ELSE before END,
				after = CASE WHEN after -> 'custom_fields' ->> $2 = $3
					THEN jsonb_set(after, ARRAY['custom_fields', $2], to_jsonb($4::text)) ELSE after END
			WHERE object = $5 AND record_id = $1
				AND (before -> 'custom_fields' ->> $2 = $3 OR after -> 'custom_fields' ->> $2 = $3)
			RETURNING id`, h.RecordID, h.Field, EmailValue(email), history.Erased, r.Object)); err != nil {
			return 0, err
		}
	}
	return int64(len(changed)), nil
}

// RedactEvents replaces the data of the relayed events of r.Types that
// the outbox still holds (rows a previous release's relay marked
// published and kept until its retention) of the person's records ids,
// and of any record carrying the address (as its email or in a custom
// field), with the id alone; events not yet relayed go out as they are,
// to the events feed an erasure redacts afterwards. No index answers the
// address: it reads the outbox.
func (r Records) RedactEvents(ctx context.Context, tx pgx.Tx, ids []int64, email string) (int64, error) {
	quoted, err := json.Marshal(EmailValue(email))
	if err != nil {
		return 0, err
	}
	aggregates := make([]string, len(ids))
	for i, id := range ids {
		aggregates[i] = strconv.FormatInt(id, 10)
	}
	tag, err := tx.Exec(ctx, `UPDATE outbox SET payload = json_build_object('id', aggregate_id::bigint)
		WHERE stream = $1 AND type = ANY($2) AND published_at IS NOT NULL
			AND (aggregate_id = ANY($3) OR strpos(lower(payload::text), $4) > 0)`,
		r.Stream, r.Types, aggregates, string(quoted))
	if err != nil {
		return 0, fmt.Errorf("redact events: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Erasure is what erasing a person's records did: the records it deleted
// and how many notes, tasks and history entries went with them, the
// other records whose custom fields it cleared of the address, and how
// many relayed events it redacted.
type Erasure struct {
	IDs     []int64
	Cleared []int64
	Notes   int64
	Tasks   int64
	History int64
	Events  int64
}

// Erase erases, inside tx, the person with email whose records are ids
// (locked by the caller, after it held defs, the records' custom-field
// definitions): it clears the address from the custom fields of other
// records (clear, as Clear takes it), deletes each of ids (remove, as the
// context deletes a record: its notes and tasks, its events), and then
// redacts the history of the person's records, present and deleted
// before (the deletes' entries included), the address wherever else the
// history holds it (a record's email changed since, another record's
// custom field), and the relayed events that carry either.
func (r Records) Erase(ctx context.Context, tx pgx.Tx, defs []customfield.Definition, email string, ids []int64,
	remove func(id int64) error, clear func(id int64, fields []string) error) (Erasure, error) {
	var done Erasure
	past, err := r.Past(ctx, tx, email, ids)
	if err != nil {
		return done, err
	}
	held, err := r.Held(ctx, tx, defs, email, ids, true)
	if err != nil {
		return done, err
	}
	if done.Cleared, err = r.Clear(ctx, tx, held, clear); err != nil {
		return done, err
	}
	if len(ids) > 0 {
		done.IDs = ids
		if done.Notes, done.Tasks, err = r.Activities(ctx, tx, ids); err != nil {
			return done, err
		}
		for _, id := range ids {
			if err := remove(id); err != nil {
				return done, err
			}
		}
	}
	if done.History, err = history.Redact(ctx, tx, r.Object, append(slices.Clone(ids), past...)); err != nil {
		return done, err
	}
	values, err := r.RedactValues(ctx, tx, email, held)
	if err != nil {
		return done, err
	}
	done.History += values
	done.Events, err = r.RedactEvents(ctx, tx, ids, email)
	return done, err
}

// Around is what an export reads around the person's records ids: their
// tasks, their history and that of the person's records deleted before,
// and the other records' custom fields holding the address.
type Around struct {
	Tasks   []contactsapi.Task
	History []historyapi.HistoryEntry
	Held    []Held
}

// Around reads the tasks, history and held values around the person's
// records ids, with defs the records' custom-field definitions (in the
// caller's snapshot q).
func (r Records) Around(ctx context.Context, q db.Querier, defs []customfield.Definition, email string, ids []int64) (Around, error) {
	var a Around
	var err error
	if a.Tasks, err = r.Tasks(ctx, q, ids); err != nil {
		return a, err
	}
	past, err := r.Past(ctx, q, email, ids)
	if err != nil {
		return a, err
	}
	if a.History, err = r.History(ctx, q, append(slices.Clone(ids), past...)); err != nil {
		return a, err
	}
	a.Held, err = r.Held(ctx, q, defs, email, ids, false)
	return a, err
}
