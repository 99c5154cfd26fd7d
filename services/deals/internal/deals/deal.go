package deals

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/validate"
)

// ResolveScope turns scope=me|team|company into an assignee restriction.
func (s *Service) ResolveScope(ctx context.Context, scope string, userID int64, teamID *int64) ([]int64, error) {
	switch scope {
	case list.ScopeMe:
		return []int64{userID}, nil
	case list.ScopeTeam:
		ids, err := s.store.TeamMembers(ctx, userID, teamID)
		if ids == nil {
			ids = []int64{}
		}
		return ids, err
	}
	return nil, nil
}

// ListDeals returns one page of deals and how many match in all.
func (s *Service) ListDeals(ctx context.Context, f DealFilter) ([]Deal, int, error) {
	return s.store.ListDeals(ctx, f)
}

// GetDeal returns one deal.
func (s *Service) GetDeal(ctx context.Context, id int64) (Deal, error) {
	return s.store.GetDeal(ctx, id)
}

// CreateDeal validates and stores a new deal. owner is the assignee used
// when the body names none (the caller, for the public API).
func (s *Service) CreateDeal(ctx context.Context, in dealsapi.DealInput, owner *int64) (Deal, error) {
	if !in.AssignedTo.Set && owner != nil {
		in.AssignedTo = patch.Of(*owner)
	}
	defs, err := s.store.Definitions(ctx)
	if err != nil {
		return Deal{}, err
	}
	refs, err := s.lookupRefs(ctx, in, nil, defs)
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
// the same key and body always answer with the same deal. Its custom
// fields are checked as a public create's.
func (s *Service) CreateDealOnce(ctx context.Context, key string, in dealsapi.DealInput) (idempotency.Done[dealsapi.Deal], error) {
	defs, err := s.store.Definitions(ctx)
	if err != nil {
		return idempotency.Done[dealsapi.Deal]{}, err
	}
	refs, err := s.lookupRefs(ctx, in, nil, defs)
	if err != nil {
		return idempotency.Done[dealsapi.Deal]{}, err
	}
	rec, err := dealRecord(in, nil, refs)
	if err != nil {
		return idempotency.Done[dealsapi.Deal]{}, err
	}
	return s.store.CreateDealOnce(ctx, key, in, rec)
}

// UpdateDeal applies a PUT body to a deal. What the body refers to
// (stages, users, companies, contacts) is looked up first, without locks:
// no remote call runs under a row lock. The body is then applied to the
// deal as read FOR UPDATE in the write's transaction, so a concurrent
// change of a field the body leaves out (absent = keep) is kept, not
// overwritten with an older read.
func (s *Service) UpdateDeal(ctx context.Context, id int64, in dealsapi.DealInput) (Deal, error) {
	cur, err := s.store.GetDeal(ctx, id)
	if err != nil {
		return Deal{}, err
	}
	defs, err := s.store.Definitions(ctx)
	if err != nil {
		return Deal{}, err
	}
	refs, err := s.lookupRefs(ctx, in, &cur, defs)
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
	defs       []customfield.Definition
	users      map[int64]bool // the users the body's user custom fields name: whether each exists
}

// bodyStatus returns the body's status when it is a valid one, else "".
func bodyStatus(in dealsapi.DealInput) string {
	if in.Status.Set && !in.Status.Null && slices.Contains(Outcomes, in.Status.Value) {
		return in.Status.Value
	}
	return ""
}

// lookupRefs reads what in refers to, for dealRecord. Only well-formed ids
// are looked up; contacts being down fails the write (unavailable),
// except for the best-effort refresh of the current company's name. cur
// is the deal as read before the lock (nil on create); defs are the
// custom fields of deals.
func (s *Service) lookupRefs(ctx context.Context, in dealsapi.DealInput, cur *Deal, defs []customfield.Definition) (dealRefs, error) {
	r := dealRefs{defs: defs, users: map[int64]bool{}}
	for _, d := range defs {
		var id int64
		if d.Type == customfield.User && json.Unmarshal(in.CustomFields[d.Name], &id) == nil && id > 0 {
			ok, err := s.store.UserExists(ctx, id)
			if err != nil {
				return r, err
			}
			r.users[id] = ok
		}
	}
	stage := func(get func() (Stage, error)) (*Stage, error) {
		st, err := get()
		if fault.KindOf(err) == fault.KindNotFound {
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
		// invalid (a deal always has a stage): nothing to look up
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
		c, err := s.company(ctx, in.CompanyID.Value)
		switch {
		case errors.Is(err, contactsapi.ErrNotFound):
		case err != nil:
			return r, err
		default:
			r.company, r.companyID = &c, in.CompanyID.Value
		}
	case !in.CompanyID.Set && cur != nil && cur.CompanyID != nil:
		// Best effort refresh of the stored name on every write; an
		// unrelated edit must not fail because contacts is briefly down.
		if c, err := s.company(ctx, *cur.CompanyID); err == nil {
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
		_, err := s.contact(ctx, in.ContactID.Value)
		switch {
		case errors.Is(err, contactsapi.ErrNotFound):
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
func dealRecord(in dealsapi.DealInput, cur *Deal, refs dealRefs) (DealRecord, error) {
	var errs validate.Errors
	var rec DealRecord
	if cur != nil {
		rec = cur.Record()
	} else {
		rec.Currency = DefaultCurrency
	}

	title := strings.TrimSpace(in.Title)
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
		case in.Value.Set && !in.Value.Null && in.Value.Value != "":
			v, msg := ParseAmount(in.Value.Value, digits)
			if msg != "" {
				errs.Add("value", "%s", msg)
			}
			rec.Value = v
		case in.Value.Set:
			// null or "" clears the value
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
	checkCustom(in, refs, &rec, &errs)
	return rec, errs.Err()
}

// checkCustom merges the body's custom fields into the values the record
// holds (customfield.Check), adding its refusals to errs. The users they
// name were looked up by lookupRefs, so no I/O runs here.
func checkCustom(in dealsapi.DealInput, refs dealRefs, rec *DealRecord, errs *validate.Errors) {
	known := func(_ context.Context, id int64) (bool, error) { return refs.users[id], nil }
	vals, err := customfield.Check(context.Background(), refs.defs, rec.CustomFields, customfield.Input(in.CustomFields), known)
	var f *fault.Error
	switch {
	case errors.As(err, &f):
		for _, fe := range f.Fields {
			errs.Add(fe.Field, "%s", fe.Message)
		}
	case err == nil:
		rec.CustomFields = vals
	}
}

// resolveStage picks the stage: the one named, else (status given) the
// first stage with that outcome, else the current one, else the first.
func resolveStage(in dealsapi.DealInput, cur *Deal, refs dealRefs, rec *DealRecord, errs *validate.Errors) {
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
func resolveRefs(in dealsapi.DealInput, cur *Deal, refs dealRefs, rec *DealRecord, errs *validate.Errors) {
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
