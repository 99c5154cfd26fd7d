// Package store keeps leads in PostgreSQL (schema leads): hand-written SQL,
// every change and its outbox event in one transaction.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/listq"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/services/leads/internal/leads"
	"github.com/opencrm/crm/services/leads/migrations"
)

// MigrationSets lists every migration set the service applies, for test
// database fingerprints.
var MigrationSets = []fs.FS{directory.Migrations, outbox.Migrations, idempotency.Migrations,
	activity.Migrations, migrations.FS}

// Migrate applies every migration set the service uses, in order: the
// shared components' tables, then the leads schema.
func Migrate(ctx context.Context, d *db.DB) error {
	for _, m := range []func(context.Context, *db.DB) error{
		directory.Migrate, outbox.Migrate, idempotency.Migrate, activity.Migrate,
		func(ctx context.Context, d *db.DB) error { return db.Migrate(ctx, d, "leads", migrations.FS) },
	} {
		if err := m(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// Store implements leads.Store.
type Store struct {
	db    *db.DB
	users *directory.Users
}

// New returns a store on d; users answers whether an assignee exists (the
// read model, then identity).
func New(d *db.DB, users *directory.Users) (*Store, error) {
	if d == nil || users == nil {
		return nil, errors.New("store: nil database or users")
	}
	return &Store{db: d, users: users}, nil
}

var _ leads.Store = (*Store)(nil)

// DB is the pool, for tests and benchmarks that inspect the schema.
func (s *Store) DB() *db.DB { return s.db }

// Columns is the select list every lead query returns, in scan order.
const Columns = `id, first_name, last_name, email, phone, company, job_title, source, status, notes, tags,
	assigned_to, assigned_to_name, disqualify_reason, qualified_at, contact_id, company_id, deal_id,
	created_by, created_at, updated_at`

// Scan reads one row of Columns.
func Scan(row pgx.CollectableRow) (leads.Lead, error) { return scanWith(row) }

// scanWith reads Columns followed by extra destinations.
func scanWith(row pgx.CollectableRow, extra ...any) (leads.Lead, error) {
	var l leads.Lead
	dst := []any{&l.ID, &l.FirstName, &l.LastName, &l.Email, &l.Phone, &l.Company, &l.JobTitle,
		&l.Source, &l.Status, &l.Notes, &l.Tags, &l.AssignedTo, &l.AssignedToName, &l.DisqualifyReason,
		&l.QualifiedAt, &l.ContactID, &l.CompanyID, &l.DealID, &l.CreatedBy, &l.CreatedAt, &l.UpdatedAt}
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
		return leads.Lead{}, problem.NotFound("lead")
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

func insert(ctx context.Context, q db.Querier, l leads.Lead) (leads.Lead, error) {
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

// createdBody is the internal API's 201 body for a new lead, stored and
// replayed per Idempotency-Key.
func createdBody(l leads.Lead) map[string]any {
	return map[string]any{"success": true, "data": l, "message": "Lead created"}
}

// CreateOnce stores a lead at most once per Idempotency-Key; the answer is
// the internal API's 201 body.
func (s *Store) CreateOnce(ctx context.Context, key string, request any, l leads.Lead) (idempotency.Result, error) {
	return idempotency.Run(ctx, s.db, key, request, func(tx pgx.Tx) (int, any, error) {
		created, err := insert(ctx, tx, l)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusCreated, createdBody(created), nil
	})
}

// CreateManyOnce is CreateOnce for a batch (idempotency.RunMany): each lead
// is created at most once per key, with ls[i] itself as the request
// fingerprint, and answers the same 201 body. The leads that must run are
// inserted by one statement and their lead.created events by another, so a
// batch costs the same few round trips, and fires the count trigger once,
// whatever its size.
func (s *Store) CreateManyOnce(ctx context.Context, keys []string, ls []leads.Lead) ([]idempotency.Outcome, error) {
	if len(keys) != len(ls) {
		return nil, fmt.Errorf("create leads: %d keys for %d leads", len(keys), len(ls))
	}
	calls := make([]idempotency.Call, len(ls))
	for i := range ls {
		calls[i] = idempotency.Call{Key: keys[i], Request: ls[i]}
	}
	return idempotency.RunMany(ctx, s.db, calls, func(tx pgx.Tx, todo []int) ([]idempotency.Answer, error) {
		todoLeads := make([]leads.Lead, len(todo))
		for j, i := range todo {
			todoLeads[j] = ls[i]
		}
		created, err := insertMany(ctx, tx, todoLeads)
		if err != nil {
			return nil, err
		}
		events := make([]outbox.Record, len(created))
		answers := make([]idempotency.Answer, len(created))
		for j, l := range created {
			events[j] = outbox.Record{Type: leads.EventCreated, AggregateID: fmt.Sprint(l.ID), Data: l}
			answers[j] = idempotency.Answer{Status: http.StatusCreated, Body: createdBody(l)}
		}
		if err := outbox.AddMany(ctx, tx, leads.Stream, events); err != nil {
			return nil, err
		}
		return answers, nil
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
			$8::text[], $9::text[], $10::text[], $11::bigint[], $12::bigint[]) WITH ORDINALITY
			AS u (first_name, last_name, email, phone, company, job_title, source, status, notes, tags,
				assigned_to, created_by, n)),
	ins AS (
		INSERT INTO leads (id, first_name, last_name, email, phone, company, job_title, source, status,
			notes, tags, assigned_to, assigned_to_name, created_by)
		SELECT id, first_name, last_name, email, phone, company, job_title, source, status, notes, tags,
			assigned_to, (SELECT name FROM directory_users d WHERE d.id = input.assigned_to), created_by
		FROM input ORDER BY n
		RETURNING ` + Columns + `)
	SELECT ins.* FROM ins JOIN input USING (id) ORDER BY input.n`

func insertMany(ctx context.Context, q db.Querier, ls []leads.Lead) ([]leads.Lead, error) {
	if len(ls) == 0 {
		return nil, nil
	}
	var first, last []string
	var email, phone, company, job, source, status, notes, tags []*string
	var assigned, by []*int64
	for _, l := range ls {
		st := l.Status
		first, last = append(first, l.FirstName), append(last, l.LastName)
		email, phone, company, job = append(email, l.Email), append(phone, l.Phone), append(company, l.Company), append(job, l.JobTitle)
		source, status, notes, tags = append(source, l.Source), append(status, &st), append(notes, l.Notes), append(tags, l.Tags)
		assigned, by = append(assigned, l.AssignedTo), append(by, l.CreatedBy)
	}
	rows, err := q.Query(ctx, insertManySQL, first, last, email, phone, company, job, source, status, notes, tags, assigned, by)
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
	return created, nil
}

// Get reads a lead by id.
func (s *Store) Get(ctx context.Context, id int64) (leads.Lead, error) {
	return get(ctx, s.db, id, "")
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
		l, err := get(ctx, tx, id, "FOR UPDATE")
		if err != nil {
			return err
		}
		if err := change(&l); err != nil {
			return err
		}
		out, err = one(ctx, tx, "update lead", `UPDATE leads SET first_name = $1, last_name = $2, email = $3, phone = $4,
			company = $5, job_title = $6, source = $7, status = $8, notes = $9, tags = $10, assigned_to = $11,
			assigned_to_name = `+assigneeName+`, updated_at = now()
			WHERE id = $12 RETURNING `+Columns,
			l.FirstName, l.LastName, l.Email, l.Phone, l.Company, l.JobTitle, l.Source, l.Status, l.Notes,
			l.Tags, l.AssignedTo, l.ID)
		if err != nil {
			return err
		}
		return event(ctx, tx, leads.EventUpdated, out)
	})
	return out, err
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
		return event(ctx, tx, leads.EventDisqualified, out)
	})
	return out, err
}

// Delete removes the lead, its notes, tasks and saga row.
func (s *Store) Delete(ctx context.Context, id int64) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		old, err := one(ctx, tx, "delete lead", `DELETE FROM leads WHERE id = $1 RETURNING `+Columns, id)
		if err != nil {
			return err
		}
		if err := activity.DeleteAll(ctx, tx, activity.Lead, id); err != nil {
			return fmt.Errorf("delete lead activity: %w", err)
		}
		return outbox.Add(ctx, tx, leads.Stream, leads.EventDeleted, fmt.Sprint(old.ID), outbox.Tombstone(old.ID))
	})
}

// Owner returns a lead's assignee and creator.
func (s *Store) Owner(ctx context.Context, id int64) (directory.Owner, error) {
	var o directory.Owner
	err := s.db.QueryRow(ctx, `SELECT assigned_to, created_by FROM leads WHERE id = $1`, id).Scan(&o.AssignedTo, &o.CreatedBy)
	if db.IsNoRows(err) {
		return o, problem.NotFound("lead")
	}
	return o, err
}

// CanWrite decides write access with this schema's user directory.
func (s *Store) CanWrite(ctx context.Context, o directory.Owner) error {
	return directory.CheckWrite(ctx, s.db, o)
}

// UserExists consults the directory read model, and identity on a miss.
func (s *Store) UserExists(ctx context.Context, id int64) (bool, error) {
	ok, err := s.users.Exists(ctx, id)
	if err != nil {
		return false, fmt.Errorf("user exists: %w", err)
	}
	return ok, nil
}

// Where builds the filter shared by the list and the CSV export.
func Where(f leads.Filter) *listq.Where {
	w := &listq.Where{}
	q := f.Query
	if q.Search != "" {
		w.And("search_text LIKE " + w.Arg("%"+listq.EscapeLike(strings.ToLower(q.Search))+"%"))
	}
	if f.Status != "" {
		w.And("status = " + w.Arg(f.Status))
	}
	if f.Source != "" {
		w.And("lower(source) = lower(" + w.Arg(f.Source) + ")")
	}
	if f.AssignedTo != nil {
		w.And("assigned_to = " + w.Arg(*f.AssignedTo))
	}
	if q.DateFrom != nil {
		w.And("created_at >= " + w.Arg(*q.DateFrom))
	}
	if q.DateTo != nil {
		w.And("created_at < " + w.Arg(*q.DateTo))
	}
	q.Since(w)
	switch q.Scope {
	case listq.ScopeMe:
		w.And("assigned_to = " + w.Arg(f.CallerID))
	case listq.ScopeTeam:
		// The caller's team from the directory; a caller without a team is
		// a team of one.
		caller := w.Arg(f.CallerID)
		w.And(`(assigned_to = ` + caller + ` OR assigned_to IN (SELECT u.id FROM directory_users u
			JOIN directory_users me ON me.team_id = u.team_id WHERE me.id = ` + caller + `))`)
	}
	return w
}

// List returns one page of leads and the total matching.
func (s *Store) List(ctx context.Context, f leads.Filter) ([]leads.Lead, int, error) {
	if f.Query.Search != "" {
		return s.listSearch(ctx, f)
	}
	w := Where(f)
	var total int
	var err error
	if w.SQL() == "" {
		// The unfiltered total comes from the trigger-maintained counter.
		if err := s.db.QueryRow(ctx, `SELECT coalesce(sum(n), 0) FROM lead_count_deltas`).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("count leads: %w", err)
		}
	} else if total, err = s.count(ctx, w); err != nil {
		return nil, 0, err
	}
	if total == 0 || f.Query.Offset() >= total {
		return []leads.Lead{}, total, nil
	}
	sql := `SELECT ` + Columns + ` FROM leads ` + w.SQL() + ` ` + f.Query.OrderBy() + ` ` + f.Query.LimitOffset(w)
	rows, err := s.db.Query(ctx, sql, w.Args()...)
	if err != nil {
		return nil, 0, fmt.Errorf("list leads: %w", err)
	}
	items, err := pgx.CollectRows(rows, Scan)
	if err != nil {
		return nil, 0, fmt.Errorf("list leads: %w", err)
	}
	return items, total, nil
}

// count is the number of leads matching w (the filtered total).
func (s *Store) count(ctx context.Context, w *listq.Where) (int, error) {
	var n int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM leads `+w.SQL(), w.Args()...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count leads: %w", err)
	}
	return n, nil
}

// listSearch answers a search with one pass over the trigram matches: the
// total is a window count computed on the same rows the page is cut from,
// instead of a second bitmap scan and recheck for count(*).
func (s *Store) listSearch(ctx context.Context, f leads.Filter) ([]leads.Lead, int, error) {
	w := Where(f)
	// The window runs in a subquery over the unordered matches (bitmap
	// scan of the trigram index); sorting inside it would let the planner
	// walk a whole sort index and filter a million rows.
	sql := `SELECT * FROM (SELECT ` + Columns + `, count(*) OVER () AS total FROM leads ` + w.SQL() +
		`) matches ` + f.Query.OrderBy() + ` ` + f.Query.LimitOffset(w)
	rows, err := s.db.Query(ctx, sql, w.Args()...)
	if err != nil {
		return nil, 0, fmt.Errorf("search leads: %w", err)
	}
	total := 0
	items, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (leads.Lead, error) {
		l, err := scanWith(row, &total)
		return l, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("search leads: %w", err)
	}
	if len(items) == 0 && f.Query.Page > 1 {
		// A page past the end carries no window count: count separately
		// (with a fresh Where, since LimitOffset added w's paging args).
		if total, err = s.count(ctx, Where(f)); err != nil {
			return nil, 0, err
		}
	}
	return items, total, nil
}

// BeginQualification takes a lease on the lead's saga row.
func (s *Store) BeginQualification(ctx context.Context, leadID int64, lease time.Duration) (leads.Saga, error) {
	var raw []byte
	err := s.db.QueryRow(ctx, `INSERT INTO qualifications (lead_id, attempts, locked_until)
		VALUES ($1, 1, now() + make_interval(secs => $2))
		ON CONFLICT (lead_id) DO UPDATE SET attempts = qualifications.attempts + 1,
			locked_until = EXCLUDED.locked_until, updated_at = now()
		WHERE qualifications.locked_until IS NULL OR qualifications.locked_until < now()
		RETURNING state`, leadID, lease.Seconds()).Scan(&raw)
	if db.IsNoRows(err) {
		return leads.Saga{}, problem.Conflict("qualification_in_progress",
			"another qualification of this lead is in progress; retry shortly")
	}
	if db.IsForeignKeyViolation(err, "") {
		return leads.Saga{}, problem.NotFound("lead")
	}
	if err != nil {
		return leads.Saga{}, fmt.Errorf("begin qualification: %w", err)
	}
	var saga leads.Saga
	if err := json.Unmarshal(raw, &saga); err != nil {
		return leads.Saga{}, fmt.Errorf("begin qualification: decode state: %w", err)
	}
	return saga, nil
}

// SaveQualification stores the saga's progress.
func (s *Store) SaveQualification(ctx context.Context, leadID int64, saga leads.Saga) error {
	raw, err := json.Marshal(saga)
	if err != nil {
		return err
	}
	if _, err := s.db.Exec(ctx, `UPDATE qualifications SET state = $2, updated_at = now() WHERE lead_id = $1`,
		leadID, raw); err != nil {
		return fmt.Errorf("save qualification: %w", err)
	}
	return nil
}

// ReleaseQualification saves an unfinished attempt's progress and ends
// its lease.
func (s *Store) ReleaseQualification(ctx context.Context, leadID int64, saga leads.Saga) error {
	raw, err := json.Marshal(saga)
	if err != nil {
		return err
	}
	_, err = s.db.Exec(ctx, `UPDATE qualifications SET state = $2, locked_until = NULL, updated_at = now()
		WHERE lead_id = $1`, leadID, raw)
	return err
}

// FinishQualification marks the lead qualified with the saga's ids and
// publishes lead.qualified, in one transaction.
func (s *Store) FinishQualification(ctx context.Context, leadID int64, saga leads.Saga) (leads.Lead, error) {
	raw, err := json.Marshal(saga)
	if err != nil {
		return leads.Lead{}, err
	}
	var out leads.Lead
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		cur, err := get(ctx, tx, leadID, "FOR UPDATE")
		if err != nil {
			return err
		}
		if cur.Status == leads.StatusQualified {
			return leads.AlreadyQualified(cur)
		}
		if out, err = one(ctx, tx, "qualify lead", `UPDATE leads SET status = 'qualified', contact_id = $2, company_id = $3,
			deal_id = $4, qualified_at = now(), updated_at = now() WHERE id = $1 RETURNING `+Columns,
			leadID, saga.Contact.ID, saga.Company.ID, saga.Deal.ID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE qualifications SET state = $2, completed_at = now(), locked_until = NULL,
			updated_at = now() WHERE lead_id = $1`, leadID, raw); err != nil {
			return fmt.Errorf("qualify lead: %w", err)
		}
		return event(ctx, tx, leads.EventQualified, out)
	})
	return out, err
}

// RefreshAssigneeNames copies directory names onto leads whose stored
// assignee name differs (all users when userID is nil). It runs after the
// start-up sync and for every user event, so renames reach the sort column.
// The name is part of the lead as the API shows it, so the lead's
// updated_at moves too and an incremental sync sees the new name.
func (s *Store) RefreshAssigneeNames(ctx context.Context, userID *int64) (int64, error) {
	tag, err := s.db.Exec(ctx, `UPDATE leads l SET assigned_to_name = u.name, updated_at = now()
		FROM directory_users u
		WHERE l.assigned_to = u.id AND ($1::bigint IS NULL OR u.id = $1)
		  AND l.assigned_to_name IS DISTINCT FROM u.name`, userID)
	if err != nil {
		return 0, fmt.Errorf("refresh assignee names: %w", err)
	}
	return tag.RowsAffected(), nil
}

// IdentityHandler feeds the directory read model from identity's stream
// and refreshes the denormalised assignee names of a renamed user.
func (s *Store) IdentityHandler() outbox.Handler {
	base := directory.Handle(s.db)
	return func(ctx context.Context, ev outbox.Event) error {
		if err := base(ctx, ev); err != nil {
			return err
		}
		if ev.Type != directory.UserCreated && ev.Type != directory.UserUpdated {
			return nil
		}
		var u directory.User
		if err := json.Unmarshal(ev.Data, &u); err != nil {
			return nil // undecodable: the directory handler ignored it too
		}
		_, err := s.RefreshAssigneeNames(ctx, &u.ID)
		return err
	}
}

// Each streams every lead matching f in the list's order, for the CSV
// export: rows are read as they arrive, never collected.
func (s *Store) Each(ctx context.Context, f leads.Filter, fn func(leads.Lead) error) error {
	w := Where(f)
	rows, err := s.db.Query(ctx, `SELECT `+Columns+` FROM leads `+w.SQL()+` `+f.Query.OrderBy(), w.Args()...)
	if err != nil {
		return fmt.Errorf("export leads: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		l, err := Scan(rows)
		if err != nil {
			return fmt.Errorf("export leads: %w", err)
		}
		if err := fn(l); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export leads: %w", err)
	}
	return nil
}

// ImportLock names the advisory lock every lead import holds for its
// transaction (as contacts' imports do), so two files cannot both add one
// email: the second checks the table only after the first committed.
const ImportLock = "leads.import"

// CompactCounts folds the counter's per-statement deltas into one row. The
// DELETE sees only deltas committed before it started, so concurrent
// inserts are never lost, and the sum is unchanged at every instant.
func (s *Store) CompactCounts(ctx context.Context) error {
	_, err := s.db.Exec(ctx, `WITH folded AS (DELETE FROM lead_count_deltas RETURNING n)
		INSERT INTO lead_count_deltas (n) SELECT coalesce(sum(n), 0) FROM folded`)
	return err
}
