package deals

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/listq"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/validate"
)

// Service applies the deals rules on top of a Store and the contacts client.
type Service struct {
	store    Store
	contacts Contacts
	leads    Leads
}

// NewService wires the context's logic.
func NewService(store Store, contacts Contacts, leads Leads) (*Service, error) {
	if store == nil || contacts == nil || leads == nil {
		return nil, errors.New("deals: service needs a store, a contacts client and a leads client")
	}
	return &Service{store: store, contacts: contacts, leads: leads}, nil
}

// ---- stages ----

// ListStages returns the pipeline in order.
func (s *Service) ListStages(ctx context.Context) ([]Stage, error) { return s.store.ListStages(ctx) }

// GetStage returns one stage.
func (s *Service) GetStage(ctx context.Context, id int64) (Stage, error) {
	return s.store.GetStage(ctx, id)
}

func stageRecord(in StageWrite, cur *Stage) (StageRecord, error) {
	var errs validate.Errors
	rec := StageRecord{Outcome: StatusOpen}
	if cur != nil {
		rec.Name, rec.Outcome = cur.Name, cur.Outcome
	}
	name := strings.TrimSpace(in.Name.Value)
	if errs.Required("name", name) {
		errs.MaxLen("name", name, validate.MaxName)
	}
	rec.Name = name
	if in.Position.Set && !in.Position.Null {
		if in.Position.Value < 1 {
			errs.Add("position", "must be an integer of at least 1")
		}
		p := in.Position.Value
		rec.Position = &p
	}
	if in.Outcome.Set {
		switch {
		case in.Outcome.Null || in.Outcome.Value == "":
			rec.Outcome = StatusOpen
		case errs.OneOf("outcome", in.Outcome.Value, Outcomes...):
			rec.Outcome = in.Outcome.Value
		}
	}
	return rec, errs.Err()
}

// CreateStage adds a stage (admin); without a position it goes last.
func (s *Service) CreateStage(ctx context.Context, in StageWrite) (Stage, error) {
	rec, err := stageRecord(in, nil)
	if err != nil {
		return Stage{}, err
	}
	return s.store.CreateStage(ctx, rec)
}

// UpdateStage renames, moves or changes the outcome of a stage (admin).
func (s *Service) UpdateStage(ctx context.Context, id int64, in StageWrite) (Stage, error) {
	cur, err := s.store.GetStage(ctx, id)
	if err != nil {
		return Stage{}, err
	}
	rec, err := stageRecord(in, &cur)
	if err != nil {
		return Stage{}, err
	}
	return s.store.UpdateStage(ctx, id, rec)
}

// DeleteStage removes an unused stage (admin).
func (s *Service) DeleteStage(ctx context.Context, id int64) error {
	return s.store.DeleteStage(ctx, id)
}

// ---- deals ----

// ResolveScope turns scope=me|team|company into an assignee restriction.
func (s *Service) ResolveScope(ctx context.Context, scope string, userID int64, teamID *int64) ([]int64, error) {
	switch scope {
	case listq.ScopeMe:
		return []int64{userID}, nil
	case listq.ScopeTeam:
		ids, err := s.store.TeamMembers(ctx, userID, teamID)
		if ids == nil {
			ids = []int64{}
		}
		return ids, err
	}
	return nil, nil
}

// ListDeals returns one page of deals.
func (s *Service) ListDeals(ctx context.Context, f DealFilter, q *listq.Query) (listq.Page[Deal], error) {
	items, total, err := s.store.ListDeals(ctx, f, q)
	if err != nil {
		return listq.Page[Deal]{}, err
	}
	return listq.NewPage(items, q, total), nil
}

// GetDeal returns one deal.
func (s *Service) GetDeal(ctx context.Context, id int64) (Deal, error) {
	return s.store.GetDeal(ctx, id)
}

// CreateDeal validates and stores a new deal. owner is the assignee used
// when the body names none (the caller, for the public API).
func (s *Service) CreateDeal(ctx context.Context, in DealWrite, owner *int64) (Deal, error) {
	if !in.AssignedTo.Set && owner != nil {
		in.AssignedTo.Set, in.AssignedTo.Value = true, *owner
	}
	refs, err := s.lookupRefs(ctx, in, nil)
	if err != nil {
		return Deal{}, err
	}
	rec, err := dealRecord(in, nil, refs)
	if err != nil {
		return Deal{}, err
	}
	return s.store.CreateDeal(ctx, rec)
}

// CreateDealOnce is the internal, idempotent creation (lead qualification):
// the same key and body always answer with the same deal.
func (s *Service) CreateDealOnce(ctx context.Context, key string, in DealWrite, answer func(Deal) (int, any)) (idempotency.Result, error) {
	refs, err := s.lookupRefs(ctx, in, nil)
	if err != nil {
		return idempotency.Result{}, err
	}
	rec, err := dealRecord(in, nil, refs)
	if err != nil {
		return idempotency.Result{}, err
	}
	return s.store.CreateDealOnce(ctx, key, in, rec, answer)
}

// UpdateDeal applies a PUT body to a deal. What the body refers to
// (stages, users, companies, contacts) is looked up first, without locks:
// no remote call runs under a row lock. The body is then applied to the
// deal as read FOR UPDATE in the write's transaction, so a concurrent
// change of a field the body leaves out (absent = keep) is kept, not
// overwritten with an older read.
func (s *Service) UpdateDeal(ctx context.Context, id int64, in DealWrite) (Deal, error) {
	cur, err := s.store.GetDeal(ctx, id)
	if err != nil {
		return Deal{}, err
	}
	refs, err := s.lookupRefs(ctx, in, &cur)
	if err != nil {
		return Deal{}, err
	}
	return s.store.UpdateDeal(ctx, id, func(cur Deal) (DealRecord, error) {
		return dealRecord(in, &cur, refs)
	})
}

// DeleteDeal removes a deal and its quotes.
func (s *Service) DeleteDeal(ctx context.Context, id int64) error { return s.store.DeleteDeal(ctx, id) }

// dealRefs is what a deal write needs from outside the deal row, looked up
// before the row is locked. A nil pointer is "unknown" (or not needed).
type dealRefs struct {
	stage      *Stage // the body's stage_id
	firstStage *Stage // the first stage with the body's status (open on create)
	userKnown  bool   // the body's assigned_to exists
	company    *Company
	companyID  int64 // whose record company is: the body's, else the deal's
	contactOK  bool  // the body's contact_id exists
	leadOK     bool  // the body's source_lead_id exists, or is the deal's already
}

// bodyStatus returns the body's status when it is a valid one, else "".
func bodyStatus(in DealWrite) string {
	if in.Status.Set && !in.Status.Null && slices.Contains(Outcomes, in.Status.Value) {
		return in.Status.Value
	}
	return ""
}

// lookupRefs reads what in refers to, for dealRecord. Only well-formed ids
// are looked up; contacts being down is a 503, except for the best-effort
// refresh of the current company's name. cur is the deal as read before
// the lock (nil on create).
func (s *Service) lookupRefs(ctx context.Context, in DealWrite, cur *Deal) (dealRefs, error) {
	var r dealRefs
	stage := func(get func() (Stage, error)) (*Stage, error) {
		st, err := get()
		if problem.From(err).Status == http.StatusNotFound {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return &st, nil
	}
	var err error
	status := bodyStatus(in)
	switch {
	case in.StageID.Set && !in.StageID.Null:
		r.stage, err = stage(func() (Stage, error) { return s.store.GetStage(ctx, in.StageID.Value) })
	case in.StageID.Null && cur != nil:
		// 422 (a deal always has a stage): nothing to look up
	case cur == nil || status != "":
		// On update, whether the deal moves depends on its status under
		// the lock; the stage it would move to is looked up here.
		outcome := status
		if outcome == "" {
			outcome = StatusOpen
		}
		r.firstStage, err = stage(func() (Stage, error) { return s.store.FirstStage(ctx, outcome) })
	}
	if err != nil {
		return r, err
	}

	if in.AssignedTo.Set && !in.AssignedTo.Null && in.AssignedTo.Value > 0 {
		if r.userKnown, err = s.store.UserExists(ctx, in.AssignedTo.Value); err != nil {
			return r, err
		}
	}
	switch {
	case in.CompanyID.Set && !in.CompanyID.Null && in.CompanyID.Value > 0:
		c, err := s.contacts.Company(ctx, in.CompanyID.Value)
		switch {
		case errors.Is(err, ErrRemoteNotFound):
		case err != nil:
			return r, err
		default:
			r.company, r.companyID = &c, in.CompanyID.Value
		}
	case !in.CompanyID.Set && cur != nil && cur.CompanyID != nil:
		// Best effort refresh of the stored name on every write; an
		// unrelated edit must not fail because contacts is briefly down.
		if c, err := s.contacts.Company(ctx, *cur.CompanyID); err == nil {
			r.company, r.companyID = &c, *cur.CompanyID
		}
	}
	r.leadOK = true
	if l := in.SourceLeadID; l.Set && !l.Null && l.Value > 0 && (cur == nil || cur.SourceLeadID == nil || *cur.SourceLeadID != l.Value) {
		// Only a new link is checked: a deal keeps its source after the
		// lead is deleted, and an unrelated edit must not fail on it.
		if r.leadOK, err = s.leads.LeadExists(ctx, l.Value); err != nil {
			return r, err
		}
	}
	if in.ContactID.Set && !in.ContactID.Null && in.ContactID.Value > 0 {
		_, err := s.contacts.Contact(ctx, in.ContactID.Value)
		switch {
		case errors.Is(err, ErrRemoteNotFound):
		case err != nil:
			return r, err
		default:
			r.contactOK = true
		}
	}
	return r, nil
}

// dealRecord validates in against the current deal (nil on create), with
// the references looked up by lookupRefs, and returns the record to store
// with every field error at once. It does no I/O: on update it runs on the
// deal as locked by the write.
func dealRecord(in DealWrite, cur *Deal, refs dealRefs) (DealRecord, error) {
	var errs validate.Errors
	var rec DealRecord
	if cur != nil {
		rec = cur.Record()
	} else {
		rec.Currency = DefaultCurrency
	}

	title := strings.TrimSpace(in.Title.Value)
	if errs.Required("title", title) {
		errs.MaxLen("title", title, validate.MaxString)
	}
	rec.Title = title

	currencyOK := true
	if in.Currency.Set {
		code := NormalizeCurrency(in.Currency.Value)
		if code == "" {
			code = DefaultCurrency
		}
		if _, ok := MinorUnits(code); !ok {
			errs.Add("currency", "must be an ISO 4217 currency code such as USD or EUR")
			currencyOK = false
		}
		rec.Currency = code
	}
	if currencyOK {
		// A deal value is rendered with 2 places, so it may
		// carry no more, even in a currency with 3 or 4 minor digits.
		digits := DealValueDigits(rec.Currency)
		switch {
		case in.Value.Set && !in.Value.Null:
			v, msg := ParseAmount(in.Value, digits)
			if msg != "" {
				errs.Add("value", "%s", msg)
			}
			rec.Value = v
		case in.Value.Null:
			rec.Value = decimal.Zero
		case cur != nil && !rec.Value.Equal(rec.Value.Truncate(digits)):
			errs.Add("value", "%s", decimalPlaces(digits))
		}
	}

	if in.ExpectedCloseDate.Set {
		rec.ExpectedCloseDate = nil
		if d := strings.TrimSpace(in.ExpectedCloseDate.Value); d != "" && errs.Date("expected_close_date", d) != nil {
			rec.ExpectedCloseDate = &d
		}
	}
	if in.SourceLeadID.Set {
		rec.SourceLeadID = in.SourceLeadID.Ptr()
		if rec.SourceLeadID != nil && errs.Positive("source_lead_id", *rec.SourceLeadID) && !refs.leadOK {
			errs.Add("source_lead_id", "does not exist")
		}
	}

	resolveStage(in, cur, refs, &rec, &errs)
	resolveRefs(in, cur, refs, &rec, &errs)
	return rec, errs.Err()
}

// resolveStage picks the stage: the one named, else (status given) the
// first stage with that outcome, else the current one, else the first.
func resolveStage(in DealWrite, cur *Deal, refs dealRefs, rec *DealRecord, errs *validate.Errors) {
	status := ""
	if in.Status.Set && !in.Status.Null && in.Status.Value != "" {
		if errs.OneOf("status", in.Status.Value, Outcomes...) {
			status = in.Status.Value
		}
	}
	switch {
	case in.StageID.Set && !in.StageID.Null:
		st := refs.stage
		if st == nil {
			errs.Add("stage_id", "does not exist")
			return
		}
		if status != "" && st.Outcome != status {
			errs.Add("status", "does not match the outcome of stage %q (%s)", st.Name, st.Outcome)
		}
		rec.StageID = st.ID
	case in.StageID.Null && cur != nil:
		errs.Add("stage_id", "cannot be cleared")
	case cur != nil && (status == "" || status == cur.Status):
		// keep the current stage
	default:
		st := refs.firstStage
		if st == nil {
			if status != "" {
				errs.Add("status", "no stage has the outcome %s", status)
			} else {
				errs.Add("stage_id", "is required: no open stage exists")
			}
			return
		}
		rec.StageID = st.ID
	}
}

// resolveRefs validates assigned_to, company_id and contact_id with the
// looked-up answers and sets the denormalised company name.
func resolveRefs(in DealWrite, cur *Deal, refs dealRefs, rec *DealRecord, errs *validate.Errors) {
	if in.AssignedTo.Set {
		rec.AssignedTo = in.AssignedTo.Ptr()
		if rec.AssignedTo != nil && errs.Positive("assigned_to", *rec.AssignedTo) && !refs.userKnown {
			errs.Add("assigned_to", "does not exist")
		}
	}
	switch {
	case in.CompanyID.Set && in.CompanyID.Null:
		rec.CompanyID, rec.CompanyName, rec.CompanyUpdatedAt = nil, nil, nil
	case in.CompanyID.Set:
		id := in.CompanyID.Value
		if errs.Positive("company_id", id) && refs.company == nil {
			errs.Add("company_id", "does not exist")
		}
		if cur == nil || cur.CompanyID == nil || *cur.CompanyID != id {
			// Another company: the current name and version do not apply.
			rec.CompanyName, rec.CompanyUpdatedAt = nil, nil
		}
		rec.CompanyID = &id
		if refs.company != nil {
			setCompanyName(rec, refs.company)
		}
	case cur != nil && cur.CompanyID != nil && refs.company != nil && refs.companyID == *cur.CompanyID:
		setCompanyName(rec, refs.company)
	}
	if in.ContactID.Set {
		rec.ContactID = in.ContactID.Ptr()
		if rec.ContactID != nil && errs.Positive("contact_id", *rec.ContactID) && !refs.contactOK {
			errs.Add("contact_id", "does not exist")
		}
	}
}

// setCompanyName takes the name of the looked-up company c (the record's
// company) unless the record already holds a newer version of it: an
// event applied between the lookup and the lock wins over the lookup.
func setCompanyName(rec *DealRecord, c *Company) {
	if rec.CompanyUpdatedAt != nil && rec.CompanyName != nil &&
		(c.UpdatedAt == nil || c.UpdatedAt.Before(*rec.CompanyUpdatedAt)) {
		return
	}
	rec.CompanyName, rec.CompanyUpdatedAt = &c.Name, c.UpdatedAt
}

// ---- quotes ----

// ListQuotes returns a deal's quotes, newest first.
func (s *Service) ListQuotes(ctx context.Context, dealID int64) ([]Quote, error) {
	return s.store.ListQuotes(ctx, dealID)
}

// GetQuote returns one quote.
func (s *Service) GetQuote(ctx context.Context, id int64) (Quote, error) {
	return s.store.GetQuote(ctx, id)
}

// CreateQuote computes and stores a quote in the deal's currency.
func (s *Service) CreateQuote(ctx context.Context, dealID int64, in QuoteWrite) (Quote, error) {
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
func (s *Service) UpdateQuote(ctx context.Context, id int64, in QuoteWrite) (Quote, error) {
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
func quoteRecord(in QuoteWrite, cur *Quote, currency string) (QuoteRecord, bool, error) {
	var errs validate.Errors
	digits, _ := MinorUnits(currency)
	rec := QuoteRecord{Status: QuoteDraft, Currency: currency}
	var lines []LineItem
	if cur != nil {
		rec.Status, rec.ValidUntil, rec.TaxRate = cur.Status, cur.ValidUntil, cur.TaxRate.Decimal
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
		if !in.TaxRate.Null {
			rate, msg := ParseRate(in.TaxRate)
			if msg != "" {
				errs.Add("tax_rate", "%s", msg)
			}
			rec.TaxRate = rate
		}
	}
	replace := cur == nil || in.LineItems.Set
	if replace {
		lines = nil
		if len(in.LineItems.Value) == 0 {
			errs.Add("line_items", "must hold at least one line item")
		}
		if len(in.LineItems.Value) > MaxLineItems {
			errs.Add("line_items", "must hold at most %d line items", MaxLineItems)
		}
		for i, li := range in.LineItems.Value {
			lines = append(lines, lineItem(li, i, digits, &errs))
		}
	}
	if err := errs.Err(); err != nil {
		return rec, replace, err
	}
	rec.LineItems = lines
	rec.Subtotal, rec.Tax, rec.Total = Totals(lines, rec.TaxRate, digits)
	if rec.Total.GreaterThanOrEqual(maxMoney) {
		return rec, replace, problem.Invalid("line_items", "the quote total must be less than 1000000000000000")
	}
	return rec, replace, nil
}

// MaxLineItems bounds one quote.
const MaxLineItems = 500

// maxQuantity bounds a line's quantity.
var maxQuantity = decimal.New(1, 9)

func lineItem(in LineItemWrite, i int, digits int32, errs *validate.Errors) LineItem {
	field := func(name string) string { return fmt.Sprintf("line_items[%d].%s", i, name) }
	desc := strings.TrimSpace(in.Description)
	if errs.Required(field("description"), desc) {
		errs.MaxLen(field("description"), desc, validate.MaxString)
	}
	var qty, price decimal.Decimal
	switch {
	case !in.Quantity.Set || in.Quantity.Null:
		errs.Add(field("quantity"), "is required")
	case in.Quantity.BadType:
		errs.Add(field("quantity"), "must be a decimal number")
	default:
		var msg string
		qty, msg = parseDecimal(in.Quantity.Text)
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
	if !in.UnitPrice.Set || in.UnitPrice.Null {
		errs.Add(field("unit_price"), "is required")
	} else {
		var msg string
		price, msg = ParseAmount(in.UnitPrice, digits)
		if msg != "" {
			errs.Add(field("unit_price"), "%s", msg)
		}
	}
	return LineItem{
		Description: desc, Quantity: Quantity{qty},
		UnitPrice: Money{Amount: price, Digits: digits},
		Amount:    Money{Amount: Round(qty.Mul(price), digits), Digits: digits},
	}
}

// ParseRate checks a tax rate: a percentage from 0 to 100 with at most 4
// decimal places.
func ParseRate(n Number) (decimal.Decimal, string) {
	if n.BadType {
		return decimal.Decimal{}, "must be a decimal number"
	}
	d, msg := parseDecimal(n.Text)
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

// ---- merge ----

// Merge gathers what contract merge tags need about a deal.
func (s *Service) Merge(ctx context.Context, id int64) (Merge, error) {
	d, err := s.store.GetDeal(ctx, id)
	if err != nil {
		return Merge{}, err
	}
	m := Merge{Deal: d, StageName: d.StageName, Company: null, Contact: null}
	if d.AssignedTo != nil {
		if m.OwnerName, err = s.store.UserName(ctx, *d.AssignedTo); err != nil {
			return Merge{}, err
		}
	}
	var primary []byte
	if d.CompanyID != nil {
		c, err := s.contacts.Company(ctx, *d.CompanyID)
		switch {
		case errors.Is(err, ErrRemoteNotFound):
		case err != nil:
			return Merge{}, err
		default:
			m.Company, primary = c.Raw, c.PrimaryContact
		}
	}
	if d.ContactID != nil {
		c, err := s.contacts.Contact(ctx, *d.ContactID)
		switch {
		case errors.Is(err, ErrRemoteNotFound):
		case err != nil:
			return Merge{}, err
		default:
			m.Contact = c
		}
	}
	if string(m.Contact) == "null" && len(primary) > 0 {
		m.Contact = primary
	}
	if m.Quote, err = s.store.MergeQuote(ctx, id); err != nil {
		return Merge{}, err
	}
	return m, nil
}

var null = []byte("null")

// DealOwner says who may change a deal (its quotes follow it).
func (s *Service) DealOwner(ctx context.Context, id int64) (directory.Owner, error) {
	return s.store.DealOwner(ctx, id)
}

// QuoteOwner says who may change a quote: its deal's owner.
func (s *Service) QuoteOwner(ctx context.Context, id int64) (directory.Owner, error) {
	return s.store.QuoteOwner(ctx, id)
}

// CanWrite answers 403 unless the caller may change a record owned by o.
func (s *Service) CanWrite(ctx context.Context, o directory.Owner) error {
	return s.store.CanWrite(ctx, o)
}
