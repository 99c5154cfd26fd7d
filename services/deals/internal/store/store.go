// Package store is the PostgreSQL implementation of deals.Store. Money is
// read as text and written as text casts, so no value ever passes through a
// float on its way to or from the database.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/listq"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/services/deals/internal/deals"
)

// Stream is where deal events go.
var Stream = outbox.Stream("deals")

// Store implements deals.Store.
type Store struct {
	db    *db.DB
	users *directory.Users
}

var _ deals.Store = (*Store)(nil)

// New returns a store on d; users answers whether an assignee exists (the
// read model, then identity).
func New(d *db.DB, users *directory.Users) (*Store, error) {
	if d == nil || users == nil {
		return nil, errors.New("store: nil database or users")
	}
	return &Store{db: d, users: users}, nil
}

func dec(s string) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return d, fmt.Errorf("store: bad numeric %q: %w", s, err)
	}
	return d, nil
}

// ---- stages ----

const stageCols = `id, name, position, outcome, created_at, updated_at`

func scanStage(row pgx.CollectableRow) (deals.Stage, error) {
	var s deals.Stage
	err := row.Scan(&s.ID, &s.Name, &s.Position, &s.Outcome, &s.CreatedAt, &s.UpdatedAt)
	return s, err
}

func one[T any](rows pgx.Rows, err error, scan pgx.RowToFunc[T], what string) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	v, err := pgx.CollectExactlyOneRow(rows, scan)
	if db.IsNoRows(err) {
		return zero, problem.NotFound(what)
	}
	return v, err
}

// ListStages returns the stages by position.
func (s *Store) ListStages(ctx context.Context) ([]deals.Stage, error) {
	rows, err := s.db.Query(ctx, `SELECT `+stageCols+` FROM deal_stages ORDER BY position, id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanStage) // never nil: an empty pipeline is []
}

// GetStage returns one stage or 404.
func (s *Store) GetStage(ctx context.Context, id int64) (deals.Stage, error) {
	rows, err := s.db.Query(ctx, `SELECT `+stageCols+` FROM deal_stages WHERE id = $1`, id)
	return one(rows, err, scanStage, "deal stage")
}

// FirstStage returns the first stage (by position) with the outcome, or 404.
func (s *Store) FirstStage(ctx context.Context, outcome string) (deals.Stage, error) {
	rows, err := s.db.Query(ctx, `SELECT `+stageCols+` FROM deal_stages WHERE outcome = $1 ORDER BY position, id LIMIT 1`, outcome)
	return one(rows, err, scanStage, "deal stage")
}

// lockStages serialises every change of positions (create, move, delete),
// while plain reads and deal writes go on.
func lockStages(ctx context.Context, tx pgx.Tx) (int, error) {
	if _, err := tx.Exec(ctx, `LOCK TABLE deal_stages IN SHARE ROW EXCLUSIVE MODE`); err != nil {
		return 0, err
	}
	var n int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM deal_stages`).Scan(&n)
	return n, err
}

func clamp(p, lo, hi int) int { return max(lo, min(p, hi)) }

func nameTaken(err error) error {
	if db.IsUniqueViolation(err, "deal_stages_name") {
		return problem.Invalid("name", "is already used by another stage")
	}
	return err
}

// CreateStage inserts a stage at rec.Position (clamped), or last.
func (s *Store) CreateStage(ctx context.Context, rec deals.StageRecord) (deals.Stage, error) {
	var st deals.Stage
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		n, err := lockStages(ctx, tx)
		if err != nil {
			return err
		}
		pos := n + 1
		if rec.Position != nil {
			pos = clamp(*rec.Position, 1, n+1)
		}
		if _, err := tx.Exec(ctx, `UPDATE deal_stages SET position = position + 1 WHERE position >= $1`, pos); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `INSERT INTO deal_stages (name, position, outcome) VALUES ($1, $2, $3) RETURNING `+stageCols,
			rec.Name, pos, rec.Outcome)
		st, err = one(rows, err, scanStage, "deal stage")
		return err
	})
	return st, nameTaken(err)
}

// UpdateStage renames and moves a stage. Its outcome can change only while
// no deal is in it: otherwise those deals' status would silently change.
func (s *Store) UpdateStage(ctx context.Context, id int64, rec deals.StageRecord) (deals.Stage, error) {
	var st deals.Stage
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		n, err := lockStages(ctx, tx)
		if err != nil {
			return err
		}
		// FOR UPDATE before looking for deals: a deal write holds its
		// stage FOR SHARE until it commits, so one that is putting a deal
		// into this stage finishes first and the check below sees it.
		rows, err := tx.Query(ctx, `SELECT `+stageCols+` FROM deal_stages WHERE id = $1 FOR UPDATE`, id)
		cur, err := one(rows, err, scanStage, "deal stage")
		if err != nil {
			return err
		}
		if rec.Outcome != cur.Outcome {
			var used bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM deals WHERE stage_id = $1)`, id).Scan(&used); err != nil {
				return err
			}
			if used {
				return problem.Conflict("stage_in_use", "the outcome of a stage that holds deals cannot change; move its deals first")
			}
		}
		pos := cur.Position
		if rec.Position != nil {
			pos = clamp(*rec.Position, 1, n)
		}
		switch {
		case pos < cur.Position:
			_, err = tx.Exec(ctx, `UPDATE deal_stages SET position = position + 1 WHERE position >= $1 AND position < $2`, pos, cur.Position)
		case pos > cur.Position:
			_, err = tx.Exec(ctx, `UPDATE deal_stages SET position = position - 1 WHERE position > $1 AND position <= $2`, cur.Position, pos)
		}
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `UPDATE deal_stages SET name = $2, position = $3, outcome = $4, updated_at = now()
			WHERE id = $1 RETURNING `+stageCols, id, rec.Name, pos, rec.Outcome)
		st, err = one(rows, err, scanStage, "deal stage")
		return err
	})
	return st, nameTaken(err)
}

// DeleteStage removes a stage no deal uses; the pipeline keeps ≥ 1 stage.
func (s *Store) DeleteStage(ctx context.Context, id int64) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		n, err := lockStages(ctx, tx)
		if err != nil {
			return err
		}
		var pos int
		err = tx.QueryRow(ctx, `DELETE FROM deal_stages WHERE id = $1 RETURNING position`, id).Scan(&pos)
		switch {
		case db.IsNoRows(err):
			return problem.NotFound("deal stage")
		case db.IsForeignKeyViolation(err, ""):
			return problem.Conflict("stage_in_use", "the stage holds deals; move them to another stage first")
		case err != nil:
			return err
		}
		if n <= 1 {
			return problem.Conflict("conflict", "the pipeline needs at least one stage")
		}
		_, err = tx.Exec(ctx, `UPDATE deal_stages SET position = position - 1 WHERE position > $1`, pos)
		return err
	})
}

// ---- deals ----

const dealSelect = `SELECT d.id, d.title, d.value::text, d.currency, d.stage_id, s.name, d.status,
	d.company_id, d.company_name, d.contact_id, to_char(d.expected_close_date, 'YYYY-MM-DD'),
	d.assigned_to, u.name, d.source_lead_id, d.created_at, d.updated_at, d.company_updated_at
	FROM deals d JOIN deal_stages s ON s.id = d.stage_id
	LEFT JOIN directory_users u ON u.id = d.assigned_to `

func scanDeal(row pgx.CollectableRow) (deals.Deal, error) {
	var d deals.Deal
	var value string
	err := row.Scan(&d.ID, &d.Title, &value, &d.Currency, &d.StageID, &d.StageName, &d.Status,
		&d.CompanyID, &d.CompanyName, &d.ContactID, &d.ExpectedCloseDate,
		&d.AssignedTo, &d.AssignedToName, &d.SourceLeadID, &d.CreatedAt, &d.UpdatedAt, &d.CompanyUpdatedAt)
	if err != nil {
		return d, err
	}
	amount, err := dec(value)
	d.Value = deals.NewDealValue(amount)
	return d, err
}

var dealSpec = listq.Spec{
	Sorts: map[string]string{
		"title":               "lower(d.title)",
		"value":               "d.value",
		"stage":               "s.position",
		"expected_close_date": "d.expected_close_date",
		"created_at":          "d.created_at",
		"updated_at":          "d.updated_at",
	},
	DefaultSort: "created_at",
	TieBreak:    "d.id",
	Updated:     "d.updated_at",
}

// DealSpec is the deals list's sort whitelist, for query parsing.
func DealSpec() listq.Spec { return dealSpec }

// ListDeals returns one page and the total matching.
func (s *Store) ListDeals(ctx context.Context, f deals.DealFilter, q *listq.Query) ([]deals.Deal, int, error) {
	var w listq.Where
	if q.Search != "" {
		p := w.Arg("%" + listq.EscapeLike(q.Search) + "%")
		w.And("(lower(d.title) LIKE lower(" + p + ") OR lower(d.company_name) LIKE lower(" + p + "))")
	}
	eq := func(col string, v *int64) {
		if v != nil {
			w.And(col + " = " + w.Arg(*v))
		}
	}
	eq("d.stage_id", f.StageID)
	eq("d.company_id", f.CompanyID)
	eq("d.contact_id", f.ContactID)
	eq("d.assigned_to", f.AssignedTo)
	if len(f.Statuses) > 0 {
		w.And("d.status = ANY(" + w.Arg(f.Statuses) + ")")
	}
	if f.AssignedToAny != nil {
		w.And("d.assigned_to = ANY(" + w.Arg(f.AssignedToAny) + ")")
	}
	if q.DateFrom != nil {
		w.And("d.created_at >= " + w.Arg(*q.DateFrom))
	}
	if q.DateTo != nil {
		w.And("d.created_at < " + w.Arg(*q.DateTo))
	}
	q.Since(&w)
	var total int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM deals d `+w.SQL(), w.Args()...).Scan(&total); err != nil {
		return nil, 0, err
	}
	where := w.SQL()
	limit := q.LimitOffset(&w)
	rows, err := s.db.Query(ctx, dealSelect+where+" "+q.OrderBy()+" "+limit, w.Args()...)
	if err != nil {
		return nil, 0, err
	}
	items, err := pgx.CollectRows(rows, scanDeal)
	return items, total, err
}

func getDeal(ctx context.Context, q db.Querier, id int64) (deals.Deal, error) {
	rows, err := q.Query(ctx, dealSelect+`WHERE d.id = $1`, id)
	return one(rows, err, scanDeal, "deal")
}

// lockedDeal locks a deal's row until the transaction ends and reads it.
// Two statements on purpose: a joined SELECT … FOR UPDATE OF d that waits
// for a concurrent move to another stage rechecks the join against the
// stage row it read before waiting, and finds no row.
func lockedDeal(ctx context.Context, tx pgx.Tx, id int64) (deals.Deal, error) {
	if err := lockDeal(ctx, tx, id); err != nil {
		return deals.Deal{}, err
	}
	return getDeal(ctx, tx, id)
}

// GetDeal returns one deal or 404.
func (s *Store) GetDeal(ctx context.Context, id int64) (deals.Deal, error) {
	return getDeal(ctx, s.db, id)
}

// stageOutcome reads the stage's outcome and holds it (FOR SHARE) so it
// cannot be deleted or change outcome before the deal commits.
func stageOutcome(ctx context.Context, tx pgx.Tx, id int64) (string, error) {
	var outcome string
	err := tx.QueryRow(ctx, `SELECT outcome FROM deal_stages WHERE id = $1 FOR SHARE`, id).Scan(&outcome)
	if db.IsNoRows(err) {
		return "", problem.Invalid("stage_id", "does not exist")
	}
	return outcome, err
}

func insertDeal(ctx context.Context, tx pgx.Tx, r deals.DealRecord) (deals.Deal, error) {
	status, err := stageOutcome(ctx, tx, r.StageID)
	if err != nil {
		return deals.Deal{}, err
	}
	var id int64
	err = tx.QueryRow(ctx, `INSERT INTO deals (title, value, currency, stage_id, status, company_id, company_name,
			company_updated_at, contact_id, expected_close_date, assigned_to, source_lead_id, created_by)
		VALUES ($1, $2::numeric, $3, $4, $5, $6, $7, $8, $9, $10::date, $11, $12, $13) RETURNING id`,
		r.Title, r.Value.String(), r.Currency, r.StageID, status, r.CompanyID, r.CompanyName, r.CompanyUpdatedAt,
		r.ContactID, r.ExpectedCloseDate, r.AssignedTo, r.SourceLeadID, directory.Caller(ctx)).Scan(&id)
	if err != nil {
		return deals.Deal{}, err
	}
	d, err := getDeal(ctx, tx, id)
	if err != nil {
		return d, err
	}
	return d, outbox.Add(ctx, tx, Stream, deals.EventDealCreated, strconv.FormatInt(id, 10), d)
}

// CreateDeal inserts a deal and its deal.created event.
func (s *Store) CreateDeal(ctx context.Context, rec deals.DealRecord) (deals.Deal, error) {
	var d deals.Deal
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		d, err = insertDeal(ctx, tx, rec)
		return err
	})
	return d, err
}

// CreateDealOnce is CreateDeal guarded by an idempotency key.
func (s *Store) CreateDealOnce(ctx context.Context, key string, request any, rec deals.DealRecord,
	answer func(deals.Deal) (int, any)) (idempotency.Result, error) {
	return idempotency.Run(ctx, s.db, key, request, func(tx pgx.Tx) (int, any, error) {
		d, err := insertDeal(ctx, tx, rec)
		if err != nil {
			return 0, nil, err
		}
		status, body := answer(d)
		return status, body, nil
	})
}

// UpdateDeal locks the deal, lets apply turn it into the record to store
// and writes every field of that; status follows the stage.
func (s *Store) UpdateDeal(ctx context.Context, id int64, apply func(deals.Deal) (deals.DealRecord, error)) (deals.Deal, error) {
	var d deals.Deal
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		cur, err := lockedDeal(ctx, tx, id)
		if err != nil {
			return err
		}
		r, err := apply(cur)
		if err != nil {
			return err
		}
		status, err := stageOutcome(ctx, tx, r.StageID)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE deals SET title = $2, value = $3::numeric, currency = $4, stage_id = $5,
				status = $6, company_id = $7, company_name = $8, company_updated_at = $9, contact_id = $10,
				expected_close_date = $11::date, assigned_to = $12, source_lead_id = $13, updated_at = now()
			WHERE id = $1`,
			id, r.Title, r.Value.String(), r.Currency, r.StageID, status, r.CompanyID, r.CompanyName, r.CompanyUpdatedAt,
			r.ContactID, r.ExpectedCloseDate, r.AssignedTo, r.SourceLeadID)
		if err != nil {
			return err
		}
		if d, err = getDeal(ctx, tx, id); err != nil {
			return err
		}
		return outbox.Add(ctx, tx, Stream, deals.EventDealUpdated, strconv.FormatInt(id, 10), d)
	})
	return d, err
}

// DeleteDeal deletes a deal (quotes cascade) and publishes deal.deleted.
func (s *Store) DeleteDeal(ctx context.Context, id int64) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		d, err := getDeal(ctx, tx, id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM deals WHERE id = $1`, id); err != nil {
			return err
		}
		return outbox.Add(ctx, tx, Stream, deals.EventDealDeleted, strconv.FormatInt(id, 10), outbox.Tombstone(d.ID))
	})
}

// RefreshCompany keeps the denormalised company name current (fed by
// contacts' company.created/updated events): version is the company's
// updated_at, and a deal whose name comes from a newer (or the same)
// version keeps it, so redelivered and reordered events never roll a name
// back. It reports how many deals changed. A deal whose shown name changes
// is updated (updated_at moves) so an incremental sync sees the new name;
// a version bump that leaves the name as it was does not touch it.
func (s *Store) RefreshCompany(ctx context.Context, companyID int64, name string, version time.Time) (int64, error) {
	tag, err := s.db.Exec(ctx, `UPDATE deals SET company_name = $2, company_updated_at = $3,
			updated_at = CASE WHEN company_name IS DISTINCT FROM $2 THEN now() ELSE updated_at END
		WHERE company_id = $1 AND (company_updated_at IS NULL OR company_updated_at < $3)`,
		companyID, name, version)
	return tag.RowsAffected(), err
}

// ---- quotes ----

const quoteCols = `q.id, q.deal_id, q.quote_number, q.status, q.currency, to_char(q.valid_until, 'YYYY-MM-DD'),
	q.subtotal::text, q.tax_rate::text, q.tax::text, q.total::text, q.created_at, q.updated_at`

func scanQuote(row pgx.CollectableRow) (deals.Quote, error) {
	var q deals.Quote
	var sub, rate, tax, total string
	err := row.Scan(&q.ID, &q.DealID, &q.QuoteNumber, &q.Status, &q.Currency, &q.ValidUntil,
		&sub, &rate, &tax, &total, &q.CreatedAt, &q.UpdatedAt)
	if err != nil {
		return q, err
	}
	var errs [4]error
	var d [4]decimal.Decimal
	for i, s := range []string{sub, rate, tax, total} {
		d[i], errs[i] = dec(s)
	}
	q.Subtotal = deals.NewMoney(d[0], q.Currency)
	q.TaxRate = deals.Quantity{Decimal: d[1]}
	q.Tax = deals.NewMoney(d[2], q.Currency)
	q.Total = deals.NewMoney(d[3], q.Currency)
	q.LineItems = []deals.LineItem{}
	return q, errors.Join(errs[:]...)
}

// withItems loads the line items of quotes in one query.
func withItems(ctx context.Context, q db.Querier, quotes []deals.Quote) ([]deals.Quote, error) {
	if len(quotes) == 0 {
		return []deals.Quote{}, nil
	}
	ids := make([]int64, len(quotes))
	at := map[int64]int{}
	for i, x := range quotes {
		ids[i], at[x.ID] = x.ID, i
	}
	rows, err := q.Query(ctx, `SELECT quote_id, description, quantity::text, unit_price::text, amount::text
		FROM quote_line_items WHERE quote_id = ANY($1) ORDER BY quote_id, position`, ids)
	if err != nil {
		return nil, err
	}
	type line struct {
		quote int64
		item  deals.LineItem
	}
	lines, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (line, error) {
		var l line
		var qty, price, amount string
		if err := row.Scan(&l.quote, &l.item.Description, &qty, &price, &amount); err != nil {
			return l, err
		}
		cur := quotes[at[l.quote]].Currency
		qd, e1 := dec(qty)
		pd, e2 := dec(price)
		ad, e3 := dec(amount)
		l.item.Quantity = deals.Quantity{Decimal: qd}
		l.item.UnitPrice = deals.NewMoney(pd, cur)
		l.item.Amount = deals.NewMoney(ad, cur)
		return l, errors.Join(e1, e2, e3)
	})
	if err != nil {
		return nil, err
	}
	for _, l := range lines {
		i := at[l.quote]
		quotes[i].LineItems = append(quotes[i].LineItems, l.item)
	}
	return quotes, nil
}

func getQuote(ctx context.Context, q db.Querier, id int64) (deals.Quote, error) {
	return readQuote(ctx, q, id, "")
}

// lockedQuote reads a quote and locks its row until the transaction ends.
func lockedQuote(ctx context.Context, tx pgx.Tx, id int64) (deals.Quote, error) {
	return readQuote(ctx, tx, id, " FOR UPDATE")
}

func readQuote(ctx context.Context, q db.Querier, id int64, lock string) (deals.Quote, error) {
	rows, err := q.Query(ctx, `SELECT `+quoteCols+` FROM quotes q WHERE q.id = $1`+lock, id)
	x, err := one(rows, err, scanQuote, "quote")
	if err != nil {
		return x, err
	}
	out, err := withItems(ctx, q, []deals.Quote{x})
	if err != nil {
		return x, err
	}
	return out[0], nil
}

// ListQuotes returns a deal's quotes, newest first; 404 for an unknown deal.
func (s *Store) ListQuotes(ctx context.Context, dealID int64) ([]deals.Quote, error) {
	var exists bool
	if err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM deals WHERE id = $1)`, dealID).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return nil, problem.NotFound("deal")
	}
	rows, err := s.db.Query(ctx, `SELECT `+quoteCols+` FROM quotes q WHERE q.deal_id = $1 ORDER BY q.created_at DESC, q.id DESC`, dealID)
	if err != nil {
		return nil, err
	}
	quotes, err := pgx.CollectRows(rows, scanQuote)
	if err != nil {
		return nil, err
	}
	return withItems(ctx, s.db, quotes)
}

// GetQuote returns one quote with its lines.
func (s *Store) GetQuote(ctx context.Context, id int64) (deals.Quote, error) {
	return getQuote(ctx, s.db, id)
}

// lockDeal serialises the writes of one deal and of its quotes, so "one
// accepted quote per deal" is decided by one transaction at a time and a
// write applies its change to the deal (or quote) as the last one left it.
func lockDeal(ctx context.Context, tx pgx.Tx, dealID int64) error {
	var id int64
	err := tx.QueryRow(ctx, `SELECT id FROM deals WHERE id = $1 FOR UPDATE`, dealID).Scan(&id)
	if db.IsNoRows(err) {
		return problem.NotFound("deal")
	}
	return err
}

func declineOthers(ctx context.Context, tx pgx.Tx, dealID, except int64, status string) error {
	if status != deals.QuoteAccepted {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE quotes SET status = 'declined', updated_at = now()
		WHERE deal_id = $1 AND status = 'accepted' AND id <> $2`, dealID, except)
	return err
}

func insertItems(ctx context.Context, tx pgx.Tx, quoteID int64, items []deals.LineItem) error {
	if _, err := tx.Exec(ctx, `DELETE FROM quote_line_items WHERE quote_id = $1`, quoteID); err != nil {
		return err
	}
	// One batch, one round trip; numerics travel as text casts (exact).
	b := &pgx.Batch{}
	for i, it := range items {
		b.Queue(`INSERT INTO quote_line_items (quote_id, position, description, quantity, unit_price, amount)
			VALUES ($1, $2, $3, $4::numeric, $5::numeric, $6::numeric)`,
			quoteID, i+1, it.Description, it.Quantity.String(), it.UnitPrice.Amount.String(), it.Amount.Amount.String())
	}
	return tx.SendBatch(ctx, b).Close()
}

// CreateQuote takes the next number of the year from the counter row in
// the same transaction (gapless: a rollback returns the number) and stores
// the quote with its lines.
func (s *Store) CreateQuote(ctx context.Context, dealID int64, r deals.QuoteRecord) (deals.Quote, error) {
	var q deals.Quote
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := lockDeal(ctx, tx, dealID); err != nil {
			return err
		}
		year := time.Now().UTC().Year()
		var n int
		if err := tx.QueryRow(ctx, `INSERT INTO quote_counters (year, last) VALUES ($1, 1)
			ON CONFLICT (year) DO UPDATE SET last = quote_counters.last + 1 RETURNING last`, year).Scan(&n); err != nil {
			return err
		}
		if err := declineOthers(ctx, tx, dealID, 0, r.Status); err != nil {
			return err
		}
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO quotes (deal_id, quote_number, status, currency, valid_until, subtotal, tax_rate, tax, total)
			VALUES ($1, $2, $3, $4, $5::date, $6::numeric, $7::numeric, $8::numeric, $9::numeric) RETURNING id`,
			dealID, fmt.Sprintf("Q-%d-%05d", year, n), r.Status, r.Currency, r.ValidUntil,
			r.Subtotal.String(), r.TaxRate.String(), r.Tax.String(), r.Total.String()).Scan(&id)
		if err != nil {
			return err
		}
		if err := insertItems(ctx, tx, id, r.LineItems); err != nil {
			return err
		}
		q, err = getQuote(ctx, tx, id)
		return err
	})
	return q, err
}

// UpdateQuote locks the quote's deal (every quote write of a deal takes
// that lock) and the quote, lets apply compute the record from the quote
// as it is now, and writes it; accepting it declines the deal's other
// accepted quote in the same transaction.
func (s *Store) UpdateQuote(ctx context.Context, id int64,
	apply func(deals.Quote) (deals.QuoteRecord, bool, error)) (deals.Quote, error) {
	var q deals.Quote
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var dealID int64
		err := tx.QueryRow(ctx, `SELECT deal_id FROM quotes WHERE id = $1`, id).Scan(&dealID)
		if db.IsNoRows(err) {
			return problem.NotFound("quote")
		}
		if err != nil {
			return err
		}
		if err := lockDeal(ctx, tx, dealID); err != nil {
			return err
		}
		cur, err := lockedQuote(ctx, tx, id)
		if err != nil {
			return err
		}
		r, replaceItems, err := apply(cur)
		if err != nil {
			return err
		}
		if err := declineOthers(ctx, tx, dealID, id, r.Status); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE quotes SET status = $2, valid_until = $3::date, subtotal = $4::numeric,
				tax_rate = $5::numeric, tax = $6::numeric, total = $7::numeric, updated_at = now()
			WHERE id = $1`, id, r.Status, r.ValidUntil, r.Subtotal.String(), r.TaxRate.String(), r.Tax.String(), r.Total.String())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return problem.NotFound("quote")
		}
		if replaceItems {
			if err := insertItems(ctx, tx, id, r.LineItems); err != nil {
				return err
			}
		}
		q, err = getQuote(ctx, tx, id)
		return err
	})
	return q, err
}

// DeleteQuote removes a quote and its lines.
func (s *Store) DeleteQuote(ctx context.Context, id int64) error {
	tag, err := s.db.Exec(ctx, `DELETE FROM quotes WHERE id = $1`, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return problem.NotFound("quote")
	}
	return nil
}

// MergeQuote returns the accepted quote, else the newest, else nil.
func (s *Store) MergeQuote(ctx context.Context, dealID int64) (*deals.Quote, error) {
	var id int64
	err := s.db.QueryRow(ctx, `SELECT id FROM quotes WHERE deal_id = $1
		ORDER BY (status = 'accepted') DESC, created_at DESC, id DESC LIMIT 1`, dealID).Scan(&id)
	if db.IsNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	q, err := getQuote(ctx, s.db, id)
	return &q, err
}

// ---- directory ----

// DealOwner returns a deal's assignee and creator.
func (s *Store) DealOwner(ctx context.Context, id int64) (directory.Owner, error) {
	var o directory.Owner
	err := s.db.QueryRow(ctx, `SELECT assigned_to, created_by FROM deals WHERE id = $1`, id).Scan(&o.AssignedTo, &o.CreatedBy)
	if db.IsNoRows(err) {
		return o, problem.NotFound("deal")
	}
	return o, err
}

// QuoteOwner returns the assignee and creator of a quote's deal.
func (s *Store) QuoteOwner(ctx context.Context, id int64) (directory.Owner, error) {
	var o directory.Owner
	err := s.db.QueryRow(ctx, `SELECT d.assigned_to, d.created_by FROM quotes q JOIN deals d ON d.id = q.deal_id
		WHERE q.id = $1`, id).Scan(&o.AssignedTo, &o.CreatedBy)
	if db.IsNoRows(err) {
		return o, problem.NotFound("quote")
	}
	return o, err
}

// CanWrite decides write access with this schema's user directory.
func (s *Store) CanWrite(ctx context.Context, o directory.Owner) error {
	return directory.CheckWrite(ctx, s.db, o)
}

// UserExists reports a known user (active or not).
func (s *Store) UserExists(ctx context.Context, id int64) (bool, error) {
	return s.users.Exists(ctx, id)
}

// UserName returns a user's name, nil when unknown.
func (s *Store) UserName(ctx context.Context, id int64) (*string, error) {
	var name string
	err := s.db.QueryRow(ctx, `SELECT name FROM directory_users WHERE id = $1`, id).Scan(&name)
	if db.IsNoRows(err) {
		return nil, nil
	}
	return &name, err
}

// TeamMembers lists the users of the caller's team (the token's team, else
// the directory's); empty when the caller has no team.
func (s *Store) TeamMembers(ctx context.Context, userID int64, teamID *int64) ([]int64, error) {
	rows, err := s.db.Query(ctx, `SELECT id FROM directory_users
		WHERE team_id = COALESCE($2::bigint, (SELECT team_id FROM directory_users WHERE id = $1)) ORDER BY id`, userID, teamID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// Contacts event types this context follows.
const (
	companyCreated = "company.created"
	companyUpdated = "company.updated"
)

// HandleContactsEvent is an outbox.Handler for crm:events:contacts: it keeps
// the company name stored on deals fresh, so lists never call contacts.
// The event's version is the company's updated_at (contacts publishes the
// full record); redelivered and reordered events are harmless, since an
// older version never replaces a newer one. An event without a version
// cannot be ordered and is ignored like any undecodable one.
func (s *Store) HandleContactsEvent(ctx context.Context, ev outbox.Event) error {
	if ev.Type != companyUpdated && ev.Type != companyCreated {
		return nil
	}
	var c struct {
		ID        int64      `json:"id"`
		Name      string     `json:"name"`
		UpdatedAt *time.Time `json:"updated_at"`
	}
	if err := json.Unmarshal(ev.Data, &c); err != nil || c.ID <= 0 || c.Name == "" || c.UpdatedAt == nil {
		return nil // undecodable: nothing a retry would fix
	}
	_, err := s.RefreshCompany(ctx, c.ID, c.Name, *c.UpdatedAt)
	return err
}
