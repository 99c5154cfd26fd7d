// Package store is the PostgreSQL implementation of contracts.Store.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/listq"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// ChunkSize is the size of one stored piece of a signed copy: large
// enough for few round trips, small enough that streaming stays cheap.
const ChunkSize = 1 << 20

// Store implements contracts.Store.
type Store struct {
	db *db.DB
	// lockWait bounds each row-lock wait of the expiry run's final pass.
	lockWait time.Duration
}

var _ contracts.Store = (*Store)(nil)

// New returns a store on d.
func New(d *db.DB) *Store { return &Store{db: d, lockWait: DefaultExpiryLockWait} }

// DefaultExpiryLockWait is how long the expiry run's final pass waits for
// one row lock before it gives up and asks for a retry (ErrDueLocked).
const DefaultExpiryLockWait = 2 * time.Second

// WithExpiryLockWait sets the final pass's lock wait (tests shorten it).
func (s *Store) WithExpiryLockWait(d time.Duration) *Store {
	s.lockWait = d
	return s
}

// ---- templates ----

const templateColumns = `t.id, t.name, t.content, t.number_prefix, t.default_term_months,
	t.header_left, t.header_center, t.header_right, t.footer_left, t.footer_center, t.footer_right,
	(SELECT count(*) FROM contracts c WHERE c.template_id = t.id), t.created_by, t.created_at, t.updated_at`

func scanTemplate(row pgx.CollectableRow) (contracts.Template, error) {
	var t contracts.Template
	err := row.Scan(&t.ID, &t.Name, &t.Content, &t.NumberPrefix, &t.DefaultTermMonths,
		&t.HeaderLeft, &t.HeaderCenter, &t.HeaderRight, &t.FooterLeft, &t.FooterCenter, &t.FooterRight,
		&t.ContractsCount, &t.CreatedBy, &t.CreatedAt.Time, &t.UpdatedAt.Time)
	return t, err
}

// ListTemplates returns every template by name.
func (s *Store) ListTemplates(ctx context.Context) ([]contracts.Template, error) {
	rows, err := s.db.Query(ctx, `SELECT `+templateColumns+` FROM templates t ORDER BY lower(t.name), t.id`)
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanTemplate)
	if err != nil {
		return nil, fmt.Errorf("list templates: %w", err)
	}
	if out == nil {
		out = []contracts.Template{}
	}
	return out, nil
}

// GetTemplate returns one template or a not_found problem.
func (s *Store) GetTemplate(ctx context.Context, id int64) (contracts.Template, error) {
	return s.getTemplate(ctx, s.db, id)
}

func (s *Store) getTemplate(ctx context.Context, q db.Querier, id int64) (contracts.Template, error) {
	return one(ctx, q, scanTemplate, "template", `SELECT `+templateColumns+` FROM templates t WHERE t.id = $1`, id)
}

// one runs a query for exactly one row: no row is a not_found problem
// naming what, any other failure is wrapped as "get <what>".
func one[T any](ctx context.Context, q db.Querier, scan pgx.RowToFunc[T], what, sql string, args ...any) (T, error) {
	var zero T
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return zero, fmt.Errorf("get %s: %w", what, err)
	}
	v, err := pgx.CollectExactlyOneRow(rows, scan)
	if db.IsNoRows(err) {
		return zero, problem.NotFound(what)
	}
	if err != nil {
		return zero, fmt.Errorf("get %s: %w", what, err)
	}
	return v, nil
}

// CreateTemplate inserts t.
func (s *Store) CreateTemplate(ctx context.Context, t contracts.Template) (contracts.Template, error) {
	var id int64
	err := s.db.QueryRow(ctx, `INSERT INTO templates (name, content, number_prefix, default_term_months,
		header_left, header_center, header_right, footer_left, footer_center, footer_right, created_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`,
		t.Name, t.Content, t.NumberPrefix, t.DefaultTermMonths, t.HeaderLeft, t.HeaderCenter, t.HeaderRight,
		t.FooterLeft, t.FooterCenter, t.FooterRight, t.CreatedBy).Scan(&id)
	if err != nil {
		return contracts.Template{}, fmt.Errorf("create template: %w", err)
	}
	return s.GetTemplate(ctx, id)
}

// UpdateTemplate saves t.
func (s *Store) UpdateTemplate(ctx context.Context, t contracts.Template) (contracts.Template, error) {
	tag, err := s.db.Exec(ctx, `UPDATE templates SET name = $2, content = $3, number_prefix = $4,
		default_term_months = $5, header_left = $6, header_center = $7, header_right = $8,
		footer_left = $9, footer_center = $10, footer_right = $11, updated_at = now() WHERE id = $1`,
		t.ID, t.Name, t.Content, t.NumberPrefix, t.DefaultTermMonths, t.HeaderLeft, t.HeaderCenter, t.HeaderRight,
		t.FooterLeft, t.FooterCenter, t.FooterRight)
	if err != nil {
		return contracts.Template{}, fmt.Errorf("update template: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return contracts.Template{}, problem.NotFound("template")
	}
	return s.GetTemplate(ctx, t.ID)
}

// DeleteTemplate removes an unused template. The foreign key is the
// guarantee; the explicit check only gives the common case a clear answer.
func (s *Store) DeleteTemplate(ctx context.Context, id int64) error {
	tag, err := s.db.Exec(ctx, `DELETE FROM templates WHERE id = $1`, id)
	if db.IsForeignKeyViolation(err, "") {
		return contracts.ErrTemplateInUse()
	}
	if err != nil {
		return fmt.Errorf("delete template: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return problem.NotFound("template")
	}
	return nil
}

// ---- contracts ----

const contractSelect = `SELECT c.id, c.contract_number, c.title, c.deal_id, c.deal_title, c.company_id,
	c.company_name, c.template_id, t.name, c.status, to_char(c.start_date, 'YYYY-MM-DD'),
	to_char(c.end_date, 'YYYY-MM-DD'), to_char(c.effective_date, 'YYYY-MM-DD'),
	to_char(c.termination_date, 'YYYY-MM-DD'), c.term_months, c.auto_renew, c.partner_ref, c.content,
	c.unresolved_tags, c.header_cells, c.footer_cells, c.created_by, c.created_at, c.updated_at,
	f.filename, f.size, f.sha256, f.uploaded_at
	FROM contracts c JOIN templates t ON t.id = c.template_id
	LEFT JOIN executed_files f ON f.contract_id = c.id`

func scanContract(row pgx.CollectableRow) (contracts.Contract, error) {
	var c contracts.Contract
	var header, footer []string
	var fname, fsha *string
	var fsize *int64
	var fat *time.Time
	err := row.Scan(&c.ID, &c.ContractNumber, &c.Title, &c.DealID, &c.DealTitle, &c.CompanyID,
		&c.CompanyName, &c.TemplateID, &c.TemplateName, &c.Status, &c.StartDate, &c.EndDate,
		&c.EffectiveDate, &c.TerminationDate, &c.TermMonths, &c.AutoRenew, &c.PartnerRef, &c.Content,
		&c.UnresolvedTags, &header, &footer, &c.CreatedBy, &c.CreatedAt.Time, &c.UpdatedAt.Time,
		&fname, &fsize, &fsha, &fat)
	if err != nil {
		return c, err
	}
	c.Name = c.Title
	copy(c.Header[:], header)
	copy(c.Footer[:], footer)
	if c.UnresolvedTags == nil {
		c.UnresolvedTags = []string{}
	}
	if fname != nil {
		c.ExecutedFile = &contracts.ExecutedFile{Filename: *fname, Size: *fsize, SHA256: *fsha,
			UploadedAt: timestamp.Of(*fat)}
	}
	return c, nil
}

func (s *Store) getContract(ctx context.Context, q db.Querier, id int64, lock bool) (contracts.Contract, error) {
	sql := contractSelect + ` WHERE c.id = $1`
	if lock {
		sql += ` FOR UPDATE OF c`
	}
	return one(ctx, q, scanContract, "contract", sql, id)
}

// GetContract returns one contract or not_found.
func (s *Store) GetContract(ctx context.Context, id int64) (contracts.Contract, error) {
	return s.getContract(ctx, s.db, id, false)
}

// ContractExists answers not_found for a missing contract.
// ContractOwner returns a contract's creator, who also stands as its
// assignee: contracts have none, and this keeps a team-scoped user to the
// contracts of their team.
func (s *Store) ContractOwner(ctx context.Context, id int64) (directory.Owner, error) {
	var o directory.Owner
	err := s.db.QueryRow(ctx, `SELECT created_by FROM contracts WHERE id = $1`, id).Scan(&o.CreatedBy)
	if db.IsNoRows(err) {
		return o, problem.NotFound("contract")
	}
	o.AssignedTo = o.CreatedBy
	return o, err
}

// CanWrite decides write access with this schema's user directory.
func (s *Store) CanWrite(ctx context.Context, o directory.Owner) error {
	return directory.CheckWrite(ctx, s.db, o)
}

func (s *Store) ContractExists(ctx context.Context, id int64) error {
	var ok bool
	if err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM contracts WHERE id = $1)`, id).Scan(&ok); err != nil {
		return fmt.Errorf("contract exists: %w", err)
	}
	if !ok {
		return problem.NotFound("contract")
	}
	return nil
}

// FormatNumber renders {prefix}-{YYYY}-{NNNNN}.
func FormatNumber(prefix string, year int, n int64) string {
	return fmt.Sprintf("%s-%04d-%05d", prefix, year, n)
}

// CreateContract numbers and inserts c in one transaction. The counter
// row of (prefix, year) is incremented first: its row lock makes
// concurrent creations of the same prefix and year wait for each other,
// and a rollback returns the number, so numbers are gapless and unique.
func (s *Store) CreateContract(ctx context.Context, c contracts.Contract, prefix string, year int, finish func(*contracts.Contract) error) (contracts.Contract, error) {
	var out contracts.Contract
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var n int64
		if err := tx.QueryRow(ctx, `INSERT INTO number_counters (prefix, year, last_value) VALUES ($1, $2, 1)
			ON CONFLICT (prefix, year) DO UPDATE SET last_value = number_counters.last_value + 1
			RETURNING last_value`, prefix, year).Scan(&n); err != nil {
			return fmt.Errorf("next contract number: %w", err)
		}
		c.ContractNumber = FormatNumber(prefix, year, n)
		if err := finish(&c); err != nil {
			return err
		}
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO contracts (contract_number, title, deal_id, deal_title, company_id,
			company_name, template_id, status, start_date, end_date, effective_date, termination_date, term_months,
			auto_renew, partner_ref, content, unresolved_tags, header_cells, footer_cells, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::date, $10::date, $11::date, $12::date, $13, $14, $15, $16,
			$17, $18, $19, $20) RETURNING id`,
			c.ContractNumber, c.Title, c.DealID, c.DealTitle, c.CompanyID, c.CompanyName, c.TemplateID, c.Status,
			c.StartDate, c.EndDate, c.EffectiveDate, c.TerminationDate, c.TermMonths, c.AutoRenew, c.PartnerRef,
			c.Content, c.UnresolvedTags, c.Header[:], c.Footer[:], c.CreatedBy).Scan(&id)
		if db.IsForeignKeyViolation(err, "") {
			return problem.Invalid("template_id", "does not exist")
		}
		if err != nil {
			return fmt.Errorf("insert contract: %w", err)
		}
		out, err = s.getContract(ctx, tx, id, false)
		return err
	})
	return out, err
}

// UpdateContract locks the contract, applies the change and saves it.
func (s *Store) UpdateContract(ctx context.Context, id int64, apply func(*contracts.Contract) error) (contracts.Contract, error) {
	return s.modify(ctx, id, func(_ pgx.Tx, c *contracts.Contract) error { return apply(c) })
}

// modify runs change on the contract locked in a transaction, saves it and
// returns it as stored.
func (s *Store) modify(ctx context.Context, id int64, change func(pgx.Tx, *contracts.Contract) error) (contracts.Contract, error) {
	var out contracts.Contract
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		c, err := s.getContract(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if err := change(tx, &c); err != nil {
			return err
		}
		if err := s.save(ctx, tx, c); err != nil {
			return err
		}
		out, err = s.getContract(ctx, tx, id, false)
		return err
	})
	return out, err
}

func (s *Store) save(ctx context.Context, tx pgx.Tx, c contracts.Contract) error {
	_, err := tx.Exec(ctx, `UPDATE contracts SET title = $2, deal_id = $3, deal_title = $4, company_id = $5,
		company_name = $6, template_id = $7, status = $8, start_date = $9::date, end_date = $10::date,
		effective_date = $11::date, termination_date = $12::date, term_months = $13, auto_renew = $14,
		partner_ref = $15, content = $16, unresolved_tags = $17, header_cells = $18, footer_cells = $19,
		updated_at = now() WHERE id = $1`,
		c.ID, c.Title, c.DealID, c.DealTitle, c.CompanyID, c.CompanyName, c.TemplateID, c.Status, c.StartDate,
		c.EndDate, c.EffectiveDate, c.TerminationDate, c.TermMonths, c.AutoRenew, c.PartnerRef, c.Content,
		c.UnresolvedTags, c.Header[:], c.Footer[:])
	if db.IsForeignKeyViolation(err, "") {
		return problem.Invalid("template_id", "does not exist")
	}
	if err != nil {
		return fmt.Errorf("save contract: %w", err)
	}
	return nil
}

// DeleteContract removes the contract, its notes, tasks and signed copy,
// if allow agrees. The contract row is locked first, the lock every change
// of the signed copy takes (modify), and the copy is looked for by a later
// statement: under READ COMMITTED that statement's snapshot includes
// every upload committed before the lock was granted, so the answer given
// to allow is current and stays so until the delete commits.
func (s *Store) DeleteContract(ctx context.Context, id int64, allow func(hasSignedCopy bool) error) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		var locked int64
		err := tx.QueryRow(ctx, `SELECT id FROM contracts WHERE id = $1 FOR UPDATE`, id).Scan(&locked)
		if db.IsNoRows(err) {
			return problem.NotFound("contract")
		}
		if err != nil {
			return fmt.Errorf("lock contract: %w", err)
		}
		var hasCopy bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM executed_files WHERE contract_id = $1)`, id).Scan(&hasCopy); err != nil {
			return fmt.Errorf("find signed copy: %w", err)
		}
		if err := allow(hasCopy); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM contracts WHERE id = $1`, id); err != nil {
			return fmt.Errorf("delete contract: %w", err)
		}
		return activity.DeleteAll(ctx, tx, activity.Contract, id)
	})
}

// Sorts is the contract list's whitelist of sort keys.
var Sorts = listq.Spec{
	Sorts: map[string]string{
		"contract_number":  "c.contract_number",
		"name":             "lower(c.title)",
		"company_name":     "lower(c.company_name)",
		"deal_title":       "lower(c.deal_title)",
		"status":           "c.status",
		"effective_date":   "c.effective_date",
		"termination_date": "c.termination_date",
		"created_at":       "c.created_at",
		"updated_at":       "c.updated_at",
	},
	DefaultSort: "contract_number",
	TieBreak:    "c.id",
	Updated:     "c.updated_at",
}

// searchExpr must stay identical to the contracts_search index expression.
const searchExpr = `lower(c.contract_number || ' ' || c.title || ' ' || c.deal_title || ' ' ||
	coalesce(c.company_name, '') || ' ' || coalesce(c.partner_ref, ''))`

// ListContracts returns one page and the total.
func (s *Store) ListContracts(ctx context.Context, f contracts.ListFilter, q *listq.Query) ([]contracts.Contract, int, error) {
	var w listq.Where
	if len(f.Statuses) > 0 {
		w.And("c.status = ANY(" + w.Arg(f.Statuses) + "::text[])")
	}
	if f.DealID != nil {
		w.And("c.deal_id = " + w.Arg(*f.DealID))
	}
	if f.ExpiringWithin != nil {
		today := f.Today
		w.And("c.status IN ('active', 'executed')")
		w.And("c.termination_date >= " + w.Arg(today) + "::date")
		w.And("c.termination_date <= " + w.Arg(today.AddDate(0, 0, *f.ExpiringWithin)) + "::date")
	}
	if q.Search != "" {
		w.And(searchExpr + " LIKE lower(" + w.Arg("%"+listq.EscapeLike(q.Search)+"%") + ")")
	}
	if q.DateFrom != nil {
		w.And("c.created_at >= " + w.Arg(*q.DateFrom))
	}
	if q.DateTo != nil {
		w.And("c.created_at < " + w.Arg(*q.DateTo))
	}
	q.Since(&w)
	var total int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM contracts c `+w.SQL(), w.Args()...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count contracts: %w", err)
	}
	order := q.OrderBy()
	rows, err := s.db.Query(ctx, contractSelect+" "+w.SQL()+" "+order+" "+q.LimitOffset(&w), w.Args()...)
	if err != nil {
		return nil, 0, fmt.Errorf("list contracts: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanContract)
	if err != nil {
		return nil, 0, fmt.Errorf("list contracts: %w", err)
	}
	return out, total, nil
}

// ---- signed copy ----

// PutExecutedFile stores the signed copy in one transaction: the contract
// row is locked, any existing copy is deleted, apply checks and changes the
// contract knowing whether a copy was replaced, the bytes are copied in
// ChunkSize pieces from f.Data (a local spool file), and the contract is
// saved. Whether a copy exists comes from the DELETE, a statement run after
// the lock was granted, not from the locking SELECT's join: when that
// SELECT waited for a concurrent upload, PostgreSQL re-reads the locked
// contract row but not the joined executed_files row, so c.ExecutedFile
// can miss the copy that upload just committed. An error from apply rolls
// the DELETE back.
func (s *Store) PutExecutedFile(ctx context.Context, id int64, f contracts.NewExecutedFile, apply func(c *contracts.Contract, replacing bool) error) (contracts.Contract, error) {
	return s.modify(ctx, id, func(tx pgx.Tx, c *contracts.Contract) error {
		tag, err := tx.Exec(ctx, `DELETE FROM executed_files WHERE contract_id = $1`, id)
		if err != nil {
			return fmt.Errorf("replace signed copy: %w", err)
		}
		if err := apply(c, tag.RowsAffected() > 0); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO executed_files (contract_id, filename, size, sha256, uploaded_by)
			VALUES ($1, $2, $3, $4, $5)`, id, f.Filename, f.Size, f.SHA256, f.UploadedBy); err != nil {
			return fmt.Errorf("store signed copy: %w", err)
		}
		buf := make([]byte, ChunkSize)
		for seq := 0; ; seq++ {
			n, rerr := io.ReadFull(f.Data, buf)
			if n > 0 {
				if _, err := tx.Exec(ctx, `INSERT INTO executed_file_chunks (contract_id, seq, data) VALUES ($1, $2, $3)`,
					id, seq, buf[:n]); err != nil {
					return fmt.Errorf("store signed copy chunk: %w", err)
				}
			}
			if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
				break
			}
			if rerr != nil {
				return fmt.Errorf("read signed copy: %w", rerr)
			}
		}
		return nil
	})
}

// StreamExecutedFile writes the signed copy chunk by chunk in a
// repeatable-read snapshot, so a concurrent replacement cannot mix two
// files; memory stays at one chunk. A missing contract is not_found
// "contract", a contract without a copy not_found "signed copy".
func (s *Store) StreamExecutedFile(ctx context.Context, id int64, start func(contracts.ExecutedFile) (io.Writer, error)) error {
	return pgx.BeginTxFunc(ctx, s.db.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var fname, fsha *string
		var fsize *int64
		var fat *time.Time
		err := tx.QueryRow(ctx, `SELECT f.filename, f.size, f.sha256, f.uploaded_at
			FROM contracts c LEFT JOIN executed_files f ON f.contract_id = c.id WHERE c.id = $1`, id).
			Scan(&fname, &fsize, &fsha, &fat)
		if db.IsNoRows(err) {
			return problem.NotFound("contract")
		}
		if err != nil {
			return fmt.Errorf("signed copy: %w", err)
		}
		if fname == nil {
			return problem.NotFound("signed copy")
		}
		w, err := start(contracts.ExecutedFile{Filename: *fname, Size: *fsize, SHA256: *fsha, UploadedAt: timestamp.Of(*fat)})
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT data FROM executed_file_chunks WHERE contract_id = $1 ORDER BY seq`, id)
		if err != nil {
			return fmt.Errorf("signed copy chunks: %w", err)
		}
		defer rows.Close()
		var chunk []byte
		for rows.Next() {
			if err := rows.Scan(&chunk); err != nil {
				return fmt.Errorf("signed copy chunk: %w", err)
			}
			if _, err := w.Write(chunk); err != nil {
				return fmt.Errorf("write signed copy: %w", err)
			}
		}
		return rows.Err()
	})
}

// DeleteExecutedFile removes the signed copy (404 when there is none).
func (s *Store) DeleteExecutedFile(ctx context.Context, id int64, apply func(*contracts.Contract) error) (contracts.Contract, error) {
	return s.modify(ctx, id, func(tx pgx.Tx, c *contracts.Contract) error {
		tag, err := tx.Exec(ctx, `DELETE FROM executed_files WHERE contract_id = $1`, id)
		if err != nil {
			return fmt.Errorf("delete signed copy: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return problem.NotFound("signed copy")
		}
		return apply(c)
	})
}

// ---- expiry and renewal ----

// ExpireAndRenew processes due contracts in batches. Each batch claims its
// rows with FOR UPDATE SKIP LOCKED and changes them in the same
// transaction as their system notes: a concurrent run skips what this one
// holds, and once committed the rows no longer match, so no contract is
// expired or renewed twice.
//
// A row skipped because someone else held it (a user's PUT, a concurrent
// run) would otherwise wait a whole day. So a final pass claims what is
// still due with a blocking FOR UPDATE under lock_timeout: a short hold is
// waited out (and a row a concurrent run changed no longer matches once it
// commits); a lock held longer than the timeout ends the run with
// contracts.ErrDueLocked, which the expiry task returns so asynq retries
// the day's task later instead of stalling its one worker.
func (s *Store) ExpireAndRenew(ctx context.Context, today time.Time, batch int) (contracts.ExpiryResult, error) {
	var res contracts.ExpiryResult
	for _, wait := range []bool{false, true} {
		for {
			n := 0
			err := s.db.InTx(ctx, func(tx pgx.Tx) error {
				if wait {
					ms := max(s.lockWait.Milliseconds(), 1)
					if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", ms)); err != nil {
						return fmt.Errorf("lock timeout: %w", err)
					}
				}
				var err error
				n, err = expireBatch(ctx, tx, today, batch, wait, &res)
				return err
			})
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "55P03" { // lock_not_available
				return res, fmt.Errorf("%w: %v", contracts.ErrDueLocked, err)
			}
			if err != nil {
				return res, err
			}
			if n < batch {
				break
			}
		}
	}
	return res, nil
}

// expireBatch claims up to batch due contracts (skipping locked rows unless
// wait), expires or renews each with its system note, counts them in res
// and returns how many it claimed.
func expireBatch(ctx context.Context, tx pgx.Tx, today time.Time, batch int, wait bool, res *contracts.ExpiryResult) (int, error) {
	lock := "FOR UPDATE SKIP LOCKED"
	if wait {
		lock = "FOR UPDATE"
	}
	rows, err := tx.Query(ctx, `SELECT id, termination_date, coalesce(end_date, effective_date), term_months, auto_renew FROM contracts
		WHERE status IN ('active', 'executed') AND termination_date < $1::date
		ORDER BY id LIMIT $2 `+lock, today, batch)
	if err != nil {
		return 0, fmt.Errorf("due contracts: %w", err)
	}
	type due struct {
		id     int64
		term   time.Time
		anchor time.Time
		month  int
		renew  bool
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (due, error) {
		var d due
		err := r.Scan(&d.id, &d.term, &d.anchor, &d.month, &d.renew)
		return d, err
	})
	if err != nil {
		return 0, fmt.Errorf("due contracts: %w", err)
	}
	for _, d := range list {
		from := contracts.FormatDate(d.term)
		if d.renew {
			next, _ := contracts.RenewedTermination(d.anchor, d.term, d.month, today)
			to := contracts.FormatDate(next)
			if _, err := tx.Exec(ctx, `UPDATE contracts SET termination_date = $2::date, updated_at = now() WHERE id = $1`, d.id, to); err != nil {
				return len(list), fmt.Errorf("renew contract %d: %w", d.id, err)
			}
			if _, err := activity.AddNote(ctx, tx, activity.Contract, d.id, contracts.RenewalNote(from, to, d.month), nil); err != nil {
				return len(list), fmt.Errorf("renewal note: %w", err)
			}
			res.Renewed++
			continue
		}
		if _, err := tx.Exec(ctx, `UPDATE contracts SET status = 'expired', updated_at = now() WHERE id = $1`, d.id); err != nil {
			return len(list), fmt.Errorf("expire contract %d: %w", d.id, err)
		}
		if _, err := activity.AddNote(ctx, tx, activity.Contract, d.id, contracts.ExpiryNote(from), nil); err != nil {
			return len(list), fmt.Errorf("expiry note: %w", err)
		}
		res.Expired++
	}
	return len(list), nil
}
