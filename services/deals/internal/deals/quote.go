package deals

import (
	"context"
	"fmt"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/validate"
)

// ListQuotes returns a deal's quotes, newest first.
func (s *Service) ListQuotes(ctx context.Context, dealID int64) ([]Quote, error) {
	return s.store.ListQuotes(ctx, dealID)
}

// GetQuote returns one quote.
func (s *Service) GetQuote(ctx context.Context, id int64) (Quote, error) {
	return s.store.GetQuote(ctx, id)
}

// CreateQuote computes and stores a quote in the deal's currency.
func (s *Service) CreateQuote(ctx context.Context, dealID int64, in dealsapi.QuoteInput) (Quote, error) {
	deal, err := s.store.GetDeal(ctx, dealID)
	if err != nil {
		return Quote{}, err
	}
	rec, _, err := quoteRecord(in, nil, deal.Currency)
	if err != nil {
		return Quote{}, err
	}
	return s.store.CreateQuote(ctx, dealID, rec)
}

// UpdateQuote applies a PUT body; line items, when given, replace all
// lines. The body is validated and the totals computed inside the write's
// transaction, on the quote as it is under the deal's lock: the stored
// totals are always those of the stored lines, and fields the body leaves
// out keep what a concurrent update wrote.
func (s *Service) UpdateQuote(ctx context.Context, id int64, in dealsapi.QuoteInput) (Quote, error) {
	return s.store.UpdateQuote(ctx, id, func(cur Quote) (QuoteRecord, bool, error) {
		return quoteRecord(in, &cur, cur.Currency)
	})
}

// DeleteQuote removes a quote (its number is not reused).
func (s *Service) DeleteQuote(ctx context.Context, id int64) error {
	return s.store.DeleteQuote(ctx, id)
}

// quoteRecord validates a quote body and computes its totals. It reports
// whether the line items are new (to be replaced in storage).
func quoteRecord(in dealsapi.QuoteInput, cur *Quote, currency string) (QuoteRecord, bool, error) {
	var errs validate.Errors
	digits, _ := MinorUnits(currency)
	rec := QuoteRecord{Status: QuoteDraft, Currency: currency}
	var lines []LineItem
	if cur != nil {
		rec.Status, rec.ValidUntil, rec.TaxRate = cur.Status, cur.ValidUntil, cur.TaxRate
		lines = cur.LineItems
	}
	if in.Status.Set && !in.Status.Null && in.Status.Value != "" {
		if errs.OneOf("status", in.Status.Value, QuoteStatuses...) {
			rec.Status = in.Status.Value
		}
	} else if in.Status.Set {
		errs.Add("status", "must be one of %s", strings.Join(QuoteStatuses, ", "))
	}
	if in.ValidUntil.Set {
		rec.ValidUntil = nil
		if d := strings.TrimSpace(in.ValidUntil.Value); d != "" && errs.Date("valid_until", d) != nil {
			rec.ValidUntil = &d
		}
	}
	if in.TaxRate.Set {
		rec.TaxRate = decimal.Zero
		if !in.TaxRate.Null && in.TaxRate.Value != "" {
			rate, msg := ParseRate(in.TaxRate.Value)
			if msg != "" {
				errs.Add("tax_rate", "%s", msg)
			}
			rec.TaxRate = rate
		}
	}
	replace := cur == nil || in.LineItems != nil
	if replace {
		lines = nil
		if len(in.LineItems) == 0 {
			errs.Add("line_items", "must hold at least one line item")
		}
		if len(in.LineItems) > MaxLineItems {
			errs.Add("line_items", "must hold at most %d line items", MaxLineItems)
		}
		for i, li := range in.LineItems {
			lines = append(lines, lineItem(li, i, digits, &errs))
		}
	}
	if err := errs.Err(); err != nil {
		return rec, replace, err
	}
	rec.LineItems = lines
	rec.Subtotal, rec.Tax, rec.Total = Totals(lines, rec.TaxRate, digits)
	if rec.Total.GreaterThanOrEqual(maxMoney) {
		return rec, replace, fault.Invalid("line_items", "the quote total must be less than 1000000000000000")
	}
	return rec, replace, nil
}

// MaxLineItems bounds one quote.
const MaxLineItems = 500

// maxQuantity bounds a line's quantity.
var maxQuantity = decimal.New(1, 9)

func lineItem(in dealsapi.LineItemInput, i int, digits int32, errs *validate.Errors) LineItem {
	field := func(name string) string { return fmt.Sprintf("line_items[%d].%s", i, name) }
	desc := strings.TrimSpace(in.Description)
	if errs.Required(field("description"), desc) {
		errs.MaxLen(field("description"), desc, validate.MaxString)
	}
	var qty, price decimal.Decimal
	if in.Quantity == "" {
		errs.Add(field("quantity"), "is required")
	} else {
		var msg string
		qty, msg = parseDecimal(in.Quantity)
		switch {
		case msg != "":
			errs.Add(field("quantity"), "%s", msg)
		case !qty.IsPositive():
			errs.Add(field("quantity"), "must be greater than 0")
		case !qty.Equal(qty.Truncate(4)):
			errs.Add(field("quantity"), "must have at most 4 decimal places")
		case qty.GreaterThan(maxQuantity):
			errs.Add(field("quantity"), "must be at most 1000000000")
		}
	}
	if in.UnitPrice == "" {
		errs.Add(field("unit_price"), "is required")
	} else {
		var msg string
		price, msg = ParseAmount(in.UnitPrice, digits)
		if msg != "" {
			errs.Add(field("unit_price"), "%s", msg)
		}
	}
	return LineItem{
		Description: desc, Quantity: qty,
		UnitPrice: Money{Amount: price, Digits: digits},
		Amount:    Money{Amount: Round(qty.Mul(price), digits), Digits: digits},
	}
}

// ParseRate checks a tax rate as sent: a percentage from 0 to 100 with at
// most 4 decimal places.
func ParseRate(text dealsapi.Decimal) (decimal.Decimal, string) {
	d, msg := parseDecimal(text)
	switch {
	case msg != "":
		return d, msg
	case d.IsNegative() || d.GreaterThan(decimal.NewFromInt(100)):
		return d, "must be a percentage between 0 and 100"
	case !d.Equal(d.Truncate(4)):
		return d, "must have at most 4 decimal places"
	}
	return d, ""
}

// Totals computes subtotal (sum of the rounded line amounts), tax
// (subtotal × rate / 100, rounded half to even at the minor unit) and total.
func Totals(lines []LineItem, ratePercent decimal.Decimal, digits int32) (subtotal, tax, total decimal.Decimal) {
	subtotal = decimal.Zero
	for _, l := range lines {
		subtotal = subtotal.Add(l.Amount.Amount)
	}
	tax = Round(subtotal.Mul(ratePercent).Div(decimal.NewFromInt(100)), digits)
	return subtotal, tax, subtotal.Add(tax)
}
