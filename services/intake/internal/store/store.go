// Package store keeps the intake log and its idempotency records in
// PostgreSQL (schema intake).
package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/list/listsql"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/services/intake/internal/intake"
)

// Options tunes how idempotency records age.
type Options struct {
	// IdemTTL is how long an answer is kept; an older key starts afresh.
	IdemTTL time.Duration
	// Orphaned is how long a request may stay in flight before it is
	// considered dead (its process crashed between storing and answering).
	Orphaned time.Duration
}

// Store implements intake.Store.
type Store struct {
	db   *db.DB
	opts Options
}

// New returns a store on d.
func New(d *db.DB, opts Options) (*Store, error) {
	if d == nil || opts.IdemTTL <= 0 || opts.Orphaned <= 0 {
		return nil, errors.New("store: needs a database, IdemTTL and Orphaned")
	}
	return &Store{db: d, opts: opts}, nil
}

var _ intake.Store = (*Store)(nil)

const columns = `id, api_key_id, status, first_name, last_name, email, phone, company, job_title,
	source, notes, origin, lead_id, attempts, next_attempt_at, last_error, created_at, updated_at, delivered_at, api_key_name`

func scan(row pgx.CollectableRow) (intake.Submission, error) {
	var s intake.Submission
	var next time.Time
	err := row.Scan(&s.ID, &s.APIKeyID, &s.Status, &s.FirstName, &s.LastName, &s.Email, &s.Phone,
		&s.Company, &s.JobTitle, &s.Source, &s.Notes, &s.Origin, &s.LeadID, &s.Attempts, &next,
		&s.LastError, &s.CreatedAt, &s.UpdatedAt, &s.DeliveredAt, &s.APIKeyName)
	if s.Status == intake.StatusPending {
		s.NextAttemptAt = timestamp.Ptr(&next)
	}
	return s, err
}

// Conflicts of an Idempotency-Key (docs/api.md, Idempotency).
var (
	errKeyReused  = fault.Conflict("idempotency_key_reused", "this Idempotency-Key was used with a different request body")
	errInProgress = fault.Conflict("request_in_progress", "a request with this Idempotency-Key is still being processed; retry later")
)

const insertValues = `api_key_id, status, first_name, last_name, email, phone, company, job_title, source,
	notes, origin, attempts, next_attempt_at, api_key_name`

// insertSQL stores a submission in one autocommit statement.
const insertSQL = `INSERT INTO submissions (` + insertValues + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, now() + $13::interval, $14)
	RETURNING ` + columns

// reserveInsertSQL reserves an Idempotency-Key and stores the submission
// linked to it in one statement: the submission row exists only if the
// reservation succeeded. (The foreign key is checked at the end of the
// statement, when both rows exist.)
const reserveInsertSQL = `WITH next AS (SELECT nextval(pg_get_serial_sequence('submissions', 'id')) AS id),
	r AS (
		INSERT INTO idempotency_requests (api_key_id, key, request_hash, state, submission_id)
		SELECT $15, $16, $17, 'in_flight', next.id FROM next
		ON CONFLICT DO NOTHING
		RETURNING submission_id)
	INSERT INTO submissions (id, ` + insertValues + `) OVERRIDING SYSTEM VALUE
	SELECT r.submission_id, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, now() + $13::interval, $14 FROM r
	RETURNING ` + columns

func insertArgs(n intake.NewSubmission) []any {
	attempts := 1
	if n.Status == intake.StatusSpam {
		attempts = 0
	}
	in := n.Input
	return []any{n.APIKeyID, n.Status, in.FirstName, in.LastName, in.Email, in.Phone, in.Company, in.JobTitle,
		in.Source, in.Notes, n.Origin, attempts, n.Lease, n.APIKeyName}
}

// Accept implements intake.Store. The common cases (no key, or a key seen
// for the first time) cost one round trip and one commit; only a key that
// already exists takes the locking path.
func (s *Store) Accept(ctx context.Context, n intake.NewSubmission, idem *intake.Idem) (intake.Accepted, error) {
	var acc intake.Accepted
	if idem == nil {
		sub, err := insertOne(ctx, s.db, insertSQL, insertArgs(n))
		acc.Submission = sub
		return acc, err
	}
	args := append(insertArgs(n), idem.APIKeyID, idem.Key, idem.Hash)
	rows, err := s.db.Query(ctx, reserveInsertSQL, args...)
	if err != nil {
		return acc, fmt.Errorf("reserve and insert submission: %w", err)
	}
	subs, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return acc, fmt.Errorf("reserve and insert submission: %w", err)
	}
	if len(subs) == 1 {
		acc.Submission = subs[0]
		return acc, nil
	}
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		done, err := s.reserve(ctx, tx, *idem, &acc)
		if err != nil || done {
			return err
		}
		acc.Submission, err = insertOne(ctx, tx, insertSQL, insertArgs(n))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE idempotency_requests SET submission_id = $3
			WHERE api_key_id = $1 AND key = $2`, idem.APIKeyID, idem.Key, acc.Submission.ID); err != nil {
			return fmt.Errorf("link idempotency key: %w", err)
		}
		return nil
	})
	return acc, err
}

// acceptManySQL stores one submission per element of its arrays in one
// statement. Ids are drawn in a materialised CTE (nextval is volatile) so
// each returned row is matched to its input and the answer keeps the input
// order, which RETURNING alone does not promise.
const acceptManySQL = `WITH input AS (
		SELECT nextval(pg_get_serial_sequence('submissions', 'id')) AS id, u.*
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::text[], $9::text[], $10::text[], $11::text[], $12::int[], $13::interval[], $14::text[]) WITH ORDINALITY
			AS u (api_key_id, status, first_name, last_name, email, phone, company, job_title, source, notes,
				origin, attempts, lease, api_key_name, n)),
	ins AS (
		INSERT INTO submissions (id, ` + insertValues + `) OVERRIDING SYSTEM VALUE
		SELECT id, api_key_id, status, first_name, last_name, email, phone, company, job_title, source, notes,
			origin, attempts, now() + lease, api_key_name
		FROM input ORDER BY n
		RETURNING ` + columns + `)
	SELECT ins.* FROM ins JOIN input USING (id) ORDER BY input.n`

// AcceptMany implements intake.Store: one statement and one commit for
// all, so concurrent submissions share the cost of a durable commit.
func (s *Store) AcceptMany(ctx context.Context, ns []intake.NewSubmission) ([]intake.Submission, error) {
	cols := make([][]any, 14)
	for _, n := range ns {
		for i, v := range insertArgs(n) {
			cols[i] = append(cols[i], v)
		}
	}
	args := make([]any, len(cols))
	for i, c := range cols {
		args[i] = c
	}
	rows, err := s.db.Query(ctx, acceptManySQL, args...)
	if err != nil {
		return nil, fmt.Errorf("insert submissions: %w", err)
	}
	subs, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("insert submissions: %w", err)
	}
	if len(subs) != len(ns) {
		return nil, fmt.Errorf("insert submissions: %d rows for %d submissions", len(subs), len(ns))
	}
	return subs, nil
}

func insertOne(ctx context.Context, q db.Querier, sql string, args []any) (intake.Submission, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return intake.Submission{}, fmt.Errorf("insert submission: %w", err)
	}
	sub, err := pgx.CollectExactlyOneRow(rows, scan)
	if err != nil {
		return intake.Submission{}, fmt.Errorf("insert submission: %w", err)
	}
	return sub, nil
}

// reserve claims idem for this request, or fills acc with what the key
// already holds (done = true), or fails with a 409.
func (s *Store) reserve(ctx context.Context, tx pgx.Tx, idem intake.Idem, acc *intake.Accepted) (done bool, err error) {
	tag, err := tx.Exec(ctx, `INSERT INTO idempotency_requests (api_key_id, key, request_hash, state)
		VALUES ($1, $2, $3, 'in_flight') ON CONFLICT DO NOTHING`, idem.APIKeyID, idem.Key, idem.Hash)
	if err != nil {
		return false, fmt.Errorf("reserve idempotency key: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return false, nil
	}
	var (
		hash         []byte
		state        string
		status       *int
		response     []byte
		stored       storedReceipt
		submissionID *int64
		age          time.Duration
	)
	err = tx.QueryRow(ctx, `SELECT request_hash, state, status, response, receipt_lead_id, receipt_queued_id,
			receipt_refusal, submission_id, now() - created_at
		FROM idempotency_requests WHERE api_key_id = $1 AND key = $2 FOR UPDATE`, idem.APIKeyID, idem.Key).
		Scan(&hash, &state, &status, &response, &stored.LeadID, &stored.QueuedID, &stored.Refusal, &submissionID, &age)
	if err != nil {
		return false, fmt.Errorf("read idempotency key: %w", err)
	}
	if age > s.opts.IdemTTL {
		// Expired (not yet purged): the key starts afresh.
		_, err := tx.Exec(ctx, `UPDATE idempotency_requests SET request_hash = $3, state = 'in_flight',
			status = NULL, response = NULL, receipt_lead_id = NULL, receipt_queued_id = NULL, receipt_refusal = NULL,
			submission_id = NULL, created_at = now()
			WHERE api_key_id = $1 AND key = $2`, idem.APIKeyID, idem.Key, idem.Hash)
		if err != nil {
			return false, fmt.Errorf("renew idempotency key: %w", err)
		}
		return false, nil
	}
	if !bytes.Equal(hash, idem.Hash) {
		return true, errKeyReused
	}
	if state == "done" {
		r, err := stored.receipt(status, response)
		if err != nil {
			return true, fmt.Errorf("idempotency key %q: %w", idem.Key, err)
		}
		r.Replayed = true
		acc.Replay = &r
		return true, nil
	}
	if age > s.opts.Orphaned && submissionID != nil {
		sub, err := s.get(ctx, tx, *submissionID)
		if err != nil {
			return true, err
		}
		acc.Orphan = &sub
		return true, nil
	}
	return true, errInProgress
}

// Finish implements intake.Store in one round trip: the statements go as
// one pipelined batch between BEGIN and COMMIT. (A batch alone runs as an
// implicit transaction, in which SET LOCAL has no effect but a warning.)
// Should a statement fail, PostgreSQL skips the rest, COMMIT included, and
// the pool closes the connection it left in the failed transaction.
// The commit is asynchronous (synchronous_commit off, for this transaction
// only): if a crash loses it, the submission is still pending with its
// lease, and the retry job delivers it again under the same leads
// Idempotency-Key, which yields the same lead; a lost idempotency answer
// is rebuilt from the submission (see reserve).
func (s *Store) Finish(ctx context.Context, o intake.Outcome) error {
	return s.FinishMany(ctx, []intake.Outcome{o})
}

// FinishMany implements intake.Store: Finish for several outcomes in the
// same single round trip and transaction.
func (s *Store) FinishMany(ctx context.Context, outs []intake.Outcome) error {
	if len(outs) == 0 {
		return nil
	}
	ids, leadIDs := make([]int64, len(outs)), make([]*int64, len(outs))
	statuses, lastErrors := make([]string, len(outs)), make([]string, len(outs))
	nexts := make([]*time.Time, len(outs))
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit = off")
	// The update is planned for each call: a plan kept from the first
	// calls, made while the table was small, joined by scanning the whole
	// table, and kept doing so as it grew.
	b.Queue("SET LOCAL plan_cache_mode = force_custom_plan")
	for i, o := range outs {
		ids[i], statuses[i], leadIDs[i], lastErrors[i] = o.ID, o.Status, o.LeadID, o.LastError
		if o.Status == intake.StatusPending {
			nexts[i] = &o.NextAttemptAt
		}
		if o.Idem != nil && o.Receipt != nil {
			b.Queue(completeIdemSQL, completeIdemArgs(*o.Idem, *o.Receipt)...)
		}
	}
	b.Queue(`UPDATE submissions s SET status = o.status, lead_id = COALESCE(o.lead_id, s.lead_id),
			next_attempt_at = COALESCE(o.next_attempt_at, s.next_attempt_at), last_error = o.last_error,
			updated_at = now(), delivered_at = CASE WHEN o.status = 'delivered' THEN now() ELSE s.delivered_at END
		FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::timestamptz[], $5::text[])
			AS o (id, status, lead_id, next_attempt_at, last_error)
		WHERE s.id = o.id`, ids, statuses, leadIDs, nexts, lastErrors)
	b.Queue("COMMIT")
	if err := s.db.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("finish submissions: %w", err)
	}
	return nil
}

const completeIdemSQL = `UPDATE idempotency_requests SET state = 'done',
		receipt_lead_id = $3, receipt_queued_id = $4, receipt_refusal = $5
	WHERE api_key_id = $1 AND key = $2`

// CompleteIdem implements intake.Store.
func (s *Store) CompleteIdem(ctx context.Context, idem intake.Idem, r intake.Receipt) error {
	if _, err := s.db.Exec(ctx, completeIdemSQL, completeIdemArgs(idem, r)...); err != nil {
		return fmt.Errorf("complete idempotency key: %w", err)
	}
	return nil
}

// ClaimDue implements intake.Store: it leases rows by pushing their
// next_attempt_at forward, so the lease needs no open transaction while
// leads is called, and a crashed replica's rows come back when it expires.
func (s *Store) ClaimDue(ctx context.Context, limit int, lease time.Duration) ([]intake.Submission, error) {
	rows, err := s.db.Query(ctx, `UPDATE submissions SET next_attempt_at = now() + $2::interval,
			attempts = attempts + 1, updated_at = now()
		WHERE id IN (
			SELECT id FROM submissions
			WHERE status = 'pending' AND next_attempt_at <= now()
			ORDER BY next_attempt_at
			LIMIT $1
			FOR UPDATE SKIP LOCKED)
		RETURNING `+columns, limit, lease)
	if err != nil {
		return nil, fmt.Errorf("claim due submissions: %w", err)
	}
	subs, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("claim due submissions: %w", err)
	}
	return subs, nil
}

// Sorts maps the admin list's sort keys (intake.SortKeys) to SQL.
var Sorts = listsql.Sorts{
	By: map[string]string{
		"created_at": "created_at", "updated_at": "updated_at", "status": "status",
		"email": "lower(email)", "attempts": "attempts", "id": "id",
	},
	TieBreak: "id",
}

// List implements intake.Store.
func (s *Store) List(ctx context.Context, f intake.Filter) ([]intake.Submission, int, error) {
	var w listsql.Where
	q := f.Query
	if f.Status != "" {
		w.And("status = " + w.Arg(f.Status))
	}
	if f.APIKeyID != nil {
		w.And("api_key_id = " + w.Arg(*f.APIKeyID))
	}
	if q.Search != "" {
		p := w.Arg("%" + listsql.EscapeLike(q.Search) + "%")
		w.And("(first_name ILIKE " + p + " OR last_name ILIKE " + p + " OR email ILIKE " + p + " OR company ILIKE " + p + ")")
	}
	if q.DateFrom != nil {
		w.And("created_at >= " + w.Arg(*q.DateFrom))
	}
	if q.DateTo != nil {
		w.And("created_at < " + w.Arg(*q.DateTo))
	}
	var total int
	if err := s.db.QueryRow(ctx, "SELECT count(*) FROM submissions "+w.SQL(), w.Args()...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count submissions: %w", err)
	}
	sql := "SELECT " + columns + " FROM submissions " + w.SQL() + " " + Sorts.OrderBy(q) + " " + listsql.LimitOffset(&w, q)
	rows, err := s.db.Query(ctx, sql, w.Args()...)
	if err != nil {
		return nil, 0, fmt.Errorf("list submissions: %w", err)
	}
	subs, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, 0, fmt.Errorf("list submissions: %w", err)
	}
	return subs, total, nil
}

// Get implements intake.Store.
func (s *Store) Get(ctx context.Context, id int64) (intake.Submission, error) {
	return s.get(ctx, s.db, id)
}

func (s *Store) get(ctx context.Context, q db.Querier, id int64) (intake.Submission, error) {
	rows, err := q.Query(ctx, "SELECT "+columns+" FROM submissions WHERE id = $1", id)
	if err != nil {
		return intake.Submission{}, fmt.Errorf("get submission: %w", err)
	}
	sub, err := pgx.CollectExactlyOneRow(rows, scan)
	if db.IsNoRows(err) {
		return intake.Submission{}, fault.NotFound("submission")
	}
	if err != nil {
		return intake.Submission{}, fmt.Errorf("get submission: %w", err)
	}
	return sub, nil
}

// PurgeIdem implements intake.Store.
func (s *Store) PurgeIdem(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.db.Exec(ctx, "DELETE FROM idempotency_requests WHERE created_at < $1", before)
	if err != nil {
		return 0, fmt.Errorf("purge idempotency keys: %w", err)
	}
	return tag.RowsAffected(), nil
}
