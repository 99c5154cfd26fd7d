package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/deals/internal/deals"
)

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
	q.TaxRate = d[1]
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
		l.item.Quantity = qd
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

// ListQuotes returns a deal's quotes, newest first; not found for an unknown deal.
func (s *Store) ListQuotes(ctx context.Context, dealID int64) ([]deals.Quote, error) {
	var exists bool
	if err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM deals WHERE id = $1)`, dealID).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return nil, fault.NotFound("deal")
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
		return fault.NotFound("deal")
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

// lines are a quote's lines as arrays of text (numerics as their exact
// text), in position order: the parameters of insertItems and linesJSON.
type lines struct{ desc, qty, price, amount []string }

func linesOf(items []deals.LineItem) lines {
	var l lines
	for _, it := range items {
		l.desc = append(l.desc, it.Description)
		l.qty = append(l.qty, it.Quantity.String())
		l.price = append(l.price, it.UnitPrice.Amount.String())
		l.amount = append(l.amount, it.Amount.Amount.String())
	}
	return l
}

func (l lines) args() []any { return []any{l.desc, l.qty, l.price, l.amount} }

// linesJSON is the quote's line_items column (migration 007: what its
// history records of the lines) for lines passed as $n…$n+3: each line's
// values as quote_line_items stores them, in position order.
func linesJSON(n int) string {
	return fmt.Sprintf(`(SELECT coalesce(jsonb_agg(jsonb_build_object('description', d, 'quantity', q::numeric(19,4),
			'unit_price', p::numeric(19,4), 'amount', a::numeric(19,4)) ORDER BY i), '[]')
		FROM unnest($%d::text[], $%d::text[], $%d::text[], $%d::text[]) WITH ORDINALITY AS l(d, q, p, a, i))`, n, n+1, n+2, n+3)
}

// insertItems replaces the quote's lines with l, in one statement (numerics
// travel as text casts: exact).
func insertItems(ctx context.Context, tx pgx.Tx, quoteID int64, l lines) error {
	if _, err := tx.Exec(ctx, `DELETE FROM quote_line_items WHERE quote_id = $1`, quoteID); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO quote_line_items (quote_id, position, description, quantity, unit_price, amount)
		SELECT $1, i, d, q::numeric, p::numeric, a::numeric
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS l(d, q, p, a, i)`,
		append([]any{quoteID}, l.args()...)...)
	return err
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
		l := linesOf(r.LineItems)
		err := tx.QueryRow(ctx, `INSERT INTO quotes (deal_id, quote_number, status, currency, valid_until, subtotal, tax_rate, tax, total,
				line_items)
			VALUES ($1, $2, $3, $4, $5::date, $6::numeric, $7::numeric, $8::numeric, $9::numeric, `+linesJSON(10)+`) RETURNING id`,
			append([]any{dealID, fmt.Sprintf("Q-%d-%05d", year, n), r.Status, r.Currency, r.ValidUntil,
				r.Subtotal.String(), r.TaxRate.String(), r.Tax.String(), r.Total.String()}, l.args()...)...).Scan(&id)
		if err != nil {
			return err
		}
		if err := insertItems(ctx, tx, id, l); err != nil {
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
			return fault.NotFound("quote")
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
		// New lines are written to the quote's row in the same statement
		// as its totals (one history entry for the write).
		l := linesOf(r.LineItems)
		tag, err := tx.Exec(ctx, `UPDATE quotes SET status = $2, valid_until = $3::date, subtotal = $4::numeric,
				tax_rate = $5::numeric, tax = $6::numeric, total = $7::numeric,
				line_items = CASE WHEN $8 THEN `+linesJSON(9)+` ELSE line_items END, updated_at = now()
			WHERE id = $1`, append([]any{id, r.Status, r.ValidUntil, r.Subtotal.String(), r.TaxRate.String(), r.Tax.String(), r.Total.String(),
			replaceItems}, l.args()...)...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fault.NotFound("quote")
		}
		if replaceItems {
			if err := insertItems(ctx, tx, id, l); err != nil {
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
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM quotes WHERE id = $1`, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fault.NotFound("quote")
		}
		return auditDeleted(ctx, tx, "quote", id)
	})
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
