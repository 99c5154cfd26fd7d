package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/audit"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

// Columns is the select list every lead query returns, in scan order.
const Columns = `id, first_name, last_name, email, phone, company, job_title, source, status, notes, tags,
	assigned_to, assigned_to_name, disqualify_reason, qualified_at, contact_id, company_id, deal_id,
	created_by, created_at, updated_at, custom_fields`

// Scan reads one row of Columns: CustomFields holds the values the lead
// stores (customfield.Values), which a read renders with the definitions.
func Scan(row pgx.CollectableRow) (leads.Lead, error) { return scanWith(row) }

// scanWith reads Columns followed by extra destinations.
func scanWith(row pgx.CollectableRow, extra ...any) (leads.Lead, error) {
	var l leads.Lead
	dst := []any{&l.ID, &l.FirstName, &l.LastName, &l.Email, &l.Phone, &l.Company, &l.JobTitle,
		&l.Source, &l.Status, &l.Notes, &l.Tags, &l.AssignedTo, &l.AssignedToName, &l.DisqualifyReason,
		&l.QualifiedAt, &l.ContactID, &l.CompanyID, &l.DealID, &l.CreatedBy, &l.CreatedAt, &l.UpdatedAt, &l.CustomFields}
	err := row.Scan(append(dst, extra...)...)
	return l, err
}

// one runs sql, which returns Columns, and reads its single row; no row is
// the lead's 404. op names the statement in wrapped errors.
func one(ctx context.Context, q db.Querier, op, sql string, args ...any) (leads.Lead, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return leads.Lead{}, fmt.Errorf("%s: %w", op, err)
	}
	l, err := pgx.CollectExactlyOneRow(rows, Scan)
	if db.IsNoRows(err) {
		return leads.Lead{}, fault.NotFound("lead")
	}
	if err != nil {
		return leads.Lead{}, fmt.Errorf("%s: %w", op, err)
	}
	return l, nil
}

// assigneeName resolves the denormalised name of assigned_to ($11) from the
// directory read model at write time; the identity consumer keeps it fresh
// afterwards.
const assigneeName = `(SELECT name FROM directory_users WHERE id = $11)`

func insert(ctx context.Context, q pgx.Tx, l leads.Lead) (leads.Lead, error) {
	ls, err := insertMany(ctx, q, []leads.Lead{l})
	if err != nil {
		return leads.Lead{}, err
	}
	created := ls[0]
	if err := event(ctx, q, leads.EventCreated, created); err != nil {
		return leads.Lead{}, err
	}
	return created, nil
}

func event(ctx context.Context, q db.Querier, typ string, l leads.Lead) error {
	return outbox.Add(ctx, q, leads.Stream, typ, fmt.Sprint(l.ID), l)
}

// Create stores a new lead and its lead.created event.
func (s *Store) Create(ctx context.Context, l leads.Lead) (leads.Lead, error) {
	var out leads.Lead
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = insert(ctx, tx, l)
		return err
	})
	return out, err
}

// CreateOnce stores a lead at most once per Idempotency-Key and keeps the
// created lead as the key's result: a retry gets that lead back.
func (s *Store) CreateOnce(ctx context.Context, key string, request any, l leads.Lead) (idempotency.Done[leads.Lead], error) {
	return idempotency.Once(ctx, s.db, key, request, func(tx pgx.Tx) (leads.Lead, error) {
		return insert(ctx, tx, l)
	})
}

// CreateManyOnce is CreateOnce for a batch (idempotency.OnceMany): each
// lead is created at most once per key, with ls[i] itself as the request
// fingerprint. The leads that must run are inserted by one statement and
// their lead.created events by another, so a batch costs the same few
// round trips, and fires the count trigger once, whatever its size.
func (s *Store) CreateManyOnce(ctx context.Context, keys []string, ls []leads.Lead) ([]idempotency.Settled[leads.Lead], error) {
	if len(keys) != len(ls) {
		return nil, fmt.Errorf("create leads: %d keys for %d leads", len(keys), len(ls))
	}
	calls := make([]idempotency.Call, len(ls))
	for i := range ls {
		calls[i] = idempotency.Call{Key: keys[i], Request: ls[i]}
	}
	return idempotency.OnceMany(ctx, s.db, calls, func(tx pgx.Tx, todo []int) ([]leads.Lead, error) {
		todoLeads := make([]leads.Lead, len(todo))
		for j, i := range todo {
			todoLeads[j] = ls[i]
		}
		created, err := insertMany(ctx, tx, todoLeads)
		if err != nil {
			return nil, err
		}
		events := make([]outbox.Record, len(created))
		for j, l := range created {
			events[j] = outbox.Record{Type: leads.EventCreated, AggregateID: fmt.Sprint(l.ID), Data: l}
		}
		if err := outbox.AddMany(ctx, tx, leads.Stream, events); err != nil {
			return nil, err
		}
		return created, nil
	})
}

// insertManySQL inserts one lead per element of its arrays (the assignee's
// name looked up as assigneeName does). The ids are
// drawn in a materialised CTE (nextval is volatile) so each returned row is
// matched to its input by id and the answer keeps the input order, which
// RETURNING alone does not promise.
const insertManySQL = `WITH input AS (
		SELECT nextval(pg_get_serial_sequence('leads', 'id')) AS id, u.*
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::text[], $9::text[], $10::text[], $11::bigint[], $12::bigint[], $13::jsonb[]) WITH ORDINALITY
			AS u (first_name, last_name, email, phone, company, job_title, source, status, notes, tags,
				assigned_to, created_by, custom_fields, n)),
	ins AS (
		INSERT INTO leads (id, first_name, last_name, email, phone, company, job_title, source, status,
			notes, tags, assigned_to, assigned_to_name, created_by, custom_fields)
		SELECT id, first_name, last_name, email, phone, company, job_title, source, status, notes, tags,
			assigned_to, (SELECT name FROM directory_users d WHERE d.id = input.assigned_to), created_by,
			custom_fields
		FROM input ORDER BY n
		RETURNING ` + Columns + `)
	SELECT ins.* FROM ins JOIN input USING (id) ORDER BY input.n`

func insertMany(ctx context.Context, q pgx.Tx, ls []leads.Lead) ([]leads.Lead, error) {
	if len(ls) == 0 {
		return nil, nil
	}
	defs, err := hold(ctx, q)
	if err != nil {
		return nil, err
	}
	for _, l := range ls {
		if err := customfield.Recheck(ctx, defs, nil, held(l)); err != nil {
			return nil, err
		}
	}
	var first, last []string
	var email, phone, company, job, source, status, notes, tags []*string
	var assigned, by []*int64
	var custom []customfield.Values
	for _, l := range ls {
		custom = append(custom, held(l))
		st := l.Status
		first, last = append(first, l.FirstName), append(last, l.LastName)
		email, phone, company, job = append(email, l.Email), append(phone, l.Phone), append(company, l.Company), append(job, l.JobTitle)
		source, status, notes, tags = append(source, l.Source), append(status, &st), append(notes, l.Notes), append(tags, l.Tags)
		assigned, by = append(assigned, l.AssignedTo), append(by, l.CreatedBy)
	}
	rows, err := q.Query(ctx, insertManySQL, first, last, email, phone, company, job, source, status, notes, tags, assigned, by, custom)
	if err != nil {
		return nil, fmt.Errorf("insert leads: %w", err)
	}
	created, err := pgx.CollectRows(rows, Scan)
	if err != nil {
		return nil, fmt.Errorf("insert leads: %w", err)
	}
	if len(created) != len(ls) {
		return nil, fmt.Errorf("insert leads: %d rows for %d leads", len(created), len(ls))
	}
	for i := range created {
		if err := claim(ctx, q, defs, created[i]); err != nil {
			return nil, err
		}
		render(defs, &created[i])
	}
	return created, nil
}

// Get reads a lead by id.
func (s *Store) Get(ctx context.Context, id int64) (leads.Lead, error) {
	l, err := get(ctx, s.db, id, "")
	if err != nil {
		return leads.Lead{}, err
	}
	return rendered(ctx, s.db, l)
}

func get(ctx context.Context, q db.Querier, id int64, lock string) (leads.Lead, error) {
	return one(ctx, q, "get lead", `SELECT `+Columns+` FROM leads WHERE id = $1 `+lock, id)
}

// Update reads the lead FOR UPDATE, lets change edit it and writes every
// writable field back with its lead.updated event, in one transaction: a
// field change leaves alone keeps the value committed when the lock was
// taken, never one read earlier.
func (s *Store) Update(ctx context.Context, id int64, change func(*leads.Lead) error) (leads.Lead, error) {
	var out leads.Lead
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		// The definitions first: a definition change holds their lock
		// while it locks the leads holding values.
		defs, err := hold(ctx, tx)
		if err != nil {
			return err
		}
		l, err := get(ctx, tx, id, "FOR UPDATE")
		if err != nil {
			return err
		}
		old := held(l)
		if err := change(&l); err != nil {
			return err
		}
		out, err = save(ctx, tx, defs, old, l)
		return err
	})
	return out, err
}

// save writes a locked lead's writable fields (old its values as read),
// claims its unique values and records lead.updated; defs are the held
// definitions.
func save(ctx context.Context, tx pgx.Tx, defs []customfield.Definition, old customfield.Values, l leads.Lead) (leads.Lead, error) {
	if err := customfield.Recheck(ctx, defs, old, held(l)); err != nil {
		return leads.Lead{}, err
	}
	out, err := one(ctx, tx, "update lead", `UPDATE leads SET first_name = $1, last_name = $2, email = $3, phone = $4,
			company = $5, job_title = $6, source = $7, status = $8, notes = $9, tags = $10, assigned_to = $11,
			assigned_to_name = `+assigneeName+`, custom_fields = $13, updated_at = now()
			WHERE id = $12 RETURNING `+Columns,
		l.FirstName, l.LastName, l.Email, l.Phone, l.Company, l.JobTitle, l.Source, l.Status, l.Notes,
		l.Tags, l.AssignedTo, l.ID, held(l))
	if err != nil {
		return leads.Lead{}, err
	}
	if err := claim(ctx, tx, defs, out); err != nil {
		return leads.Lead{}, err
	}
	render(defs, &out)
	return out, event(ctx, tx, leads.EventUpdated, out)
}

// Disqualify sets status disqualified and the reason, from any state. A
// qualified lead keeps contact_id, company_id, deal_id and qualified_at as
// the history of its qualification.
func (s *Store) Disqualify(ctx context.Context, id int64, reason *string) (leads.Lead, error) {
	var out leads.Lead
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		if out, err = one(ctx, tx, "disqualify lead", `UPDATE leads SET status = 'disqualified', disqualify_reason = $2,
			updated_at = now() WHERE id = $1 RETURNING `+Columns, id, reason); err != nil {
			return err
		}
		if out, err = rendered(ctx, tx, out); err != nil {
			return err
		}
		return event(ctx, tx, leads.EventDisqualified, out)
	})
	return out, err
}

// Delete removes the lead, its notes, tasks and saga row.
func (s *Store) Delete(ctx context.Context, id int64) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error { return remove(ctx, tx, id) })
}

// remove deletes a lead with its notes, tasks and unique values and
// records lead.deleted and, in the same transaction, the audit log's
// record.deleted (a single delete and each lead of a batch delete).
func remove(ctx context.Context, tx db.Querier, id int64) error {
	old, err := one(ctx, tx, "delete lead", `DELETE FROM leads WHERE id = $1 RETURNING `+Columns, id)
	if err != nil {
		return err
	}
	if err := activity.DeleteAll(ctx, tx, activity.Lead, id); err != nil {
		return fmt.Errorf("delete lead activity: %w", err)
	}
	if err := customfield.Release(ctx, tx, propertyapi.Leads, id); err != nil {
		return fmt.Errorf("delete lead: release unique values: %w", err)
	}
	if err := outbox.Add(ctx, tx, leads.Stream, leads.EventDeleted, fmt.Sprint(old.ID), outbox.Tombstone(old.ID)); err != nil {
		return err
	}
	return audit.Record(ctx, tx, leadsapi.Service, audit.Entry{Action: identityapi.AuditRecordDeleted,
		Object: "lead", ID: strconv.FormatInt(old.ID, 10), Details: map[string]string{"object": "lead"}})
}
