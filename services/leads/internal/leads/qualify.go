package leads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/validate"
)

// QualifyInput is the body of leadsapi.QualifyLead, including
// contact_id and company_id to qualify into an existing contact or company.
type QualifyInput struct {
	CreateCompany bool             `json:"create_company"`
	CreateDeal    bool             `json:"create_deal"`
	DealName      *string          `json:"deal_name"`
	DealValue     *decimal.Decimal `json:"deal_value"`
	DealStageID   *int64           `json:"deal_stage_id"`
	ContactID     *int64           `json:"contact_id"`
	CompanyID     *int64           `json:"company_id"`
}

// Step is one saga step's progress. ID set means done. Pending holds the
// exact body of a call whose outcome is unknown (timeout, upstream down):
// the next attempt resends it with the same Idempotency-Key, so the record
// is created once whatever the retry asks for.
type Step struct {
	ID      *int64          `json:"id,omitempty"`
	Pending json.RawMessage `json:"pending,omitempty"`
}

// Saga is the persisted progress of a lead's qualification.
type Saga struct {
	// Input is the request the saga was started with; a retry must ask
	// for the same outcome.
	Input   *QualifyInput `json:"input,omitempty"`
	Company Step          `json:"company"`
	Contact Step          `json:"contact"`
	Deal    Step          `json:"deal"`
}

// Qualified is the outcome of a qualification.
type Qualified struct {
	Lead      Lead
	ContactID *int64
	CompanyID *int64
	DealID    *int64
}

// AlreadyQualified is the 409 for a second qualification; it carries the
// ids the first one produced.
func AlreadyQualified(l Lead) error {
	return fault.Conflict("already_qualified", "the lead is already qualified").
		With("contact_id", l.ContactID).With("company_id", l.CompanyID).With("deal_id", l.DealID)
}

// IdempotencyKey names a saga step's call; keyed by the lead so every
// attempt of one lead's qualification reuses it.
func IdempotencyKey(leadID int64, step string) string {
	return "lead-" + strconv.FormatInt(leadID, 10) + "-" + step
}

func (in QualifyInput) validate(l Lead) error {
	var v validate.Errors
	if in.ContactID != nil {
		v.Positive("contact_id", *in.ContactID)
	}
	if in.CompanyID != nil {
		v.Positive("company_id", *in.CompanyID)
	}
	if in.DealStageID != nil {
		v.Positive("deal_stage_id", *in.DealStageID)
	}
	if in.DealName != nil {
		v.MaxLen("deal_name", strings.TrimSpace(*in.DealName), validate.MaxString)
	}
	if in.DealValue != nil {
		d := *in.DealValue
		switch {
		case d.IsNegative():
			v.Add("deal_value", "must be zero or more")
		case !d.Equal(d.Truncate(dealsapi.ValuePlaces)):
			v.Add("deal_value", "must have at most %d decimal places", dealsapi.ValuePlaces)
		case d.GreaterThanOrEqual(dealsapi.MaxValue):
			v.Add("deal_value", "must be less than %s", dealsapi.MaxValue.String())
		}
	}
	if in.CreateCompany && in.CompanyID == nil && (l.Company == nil || strings.TrimSpace(*l.Company) == "") {
		v.Add("create_company", "needs a company name on the lead or a company_id")
	}
	return v.Err()
}

// checkReferences looks up every id the input names before the first
// step, so a wrong id is a 422 with nothing created. Steps the saga has
// already done are not asked again.
func (s *Service) checkReferences(ctx context.Context, in QualifyInput, saga Saga) error {
	var v validate.Errors
	check := func(field, msg string, exists func(context.Context, int64) (bool, error), id *int64) error {
		if id == nil {
			return nil
		}
		ok, err := exists(ctx, *id)
		if err != nil {
			return err
		}
		if !ok {
			v.Add(field, "%s", msg)
		}
		return nil
	}
	if saga.Company.ID == nil && saga.Company.Pending == nil && !in.CreateCompany {
		if err := check("company_id", "is not an existing company", s.contacts.CompanyExists, in.CompanyID); err != nil {
			return err
		}
	}
	if saga.Contact.ID == nil && saga.Contact.Pending == nil {
		if err := check("contact_id", "is not an existing contact", s.contacts.ContactExists, in.ContactID); err != nil {
			return err
		}
	}
	if in.CreateDeal && saga.Deal.ID == nil && saga.Deal.Pending == nil {
		if err := check("deal_stage_id", "is not an existing stage", s.deals.StageExists, in.DealStageID); err != nil {
			return err
		}
	}
	return v.Err()
}

// same tells whether two qualification requests ask for the same
// outcome (names trimmed, amounts compared as numbers).
func (in QualifyInput) same(o QualifyInput) bool {
	eqID := func(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	name := func(p *string) string {
		if p == nil {
			return ""
		}
		return strings.TrimSpace(*p)
	}
	value := func(a *decimal.Decimal) decimal.Decimal {
		if a == nil {
			return decimal.Zero
		}
		return *a
	}
	return in.CreateCompany == o.CreateCompany && in.CreateDeal == o.CreateDeal && name(in.DealName) == name(o.DealName) &&
		value(in.DealValue).Equal(value(o.DealValue)) && eqID(in.DealStageID, o.DealStageID) &&
		eqID(in.ContactID, o.ContactID) && eqID(in.CompanyID, o.CompanyID)
}

// started tells a saga that has done or sent something: its parameters
// bind every retry.
func (g Saga) started() bool {
	for _, st := range []Step{g.Company, g.Contact, g.Deal} {
		if st.ID != nil || st.Pending != nil {
			return true
		}
	}
	return false
}

// QualificationPending is the 409 for a retry that asks for something
// else than the interrupted qualification it would finish: finishing it
// would silently answer the earlier records. It carries the parameters
// the retry must repeat.
func QualificationPending(earlier QualifyInput) error {
	return fault.Conflict("qualification_pending",
		"an interrupted qualification of this lead with other parameters has already created records; "+
			"retry with the same parameters to finish it").With("pending", earlier)
}

// Qualify converts the lead into a contact, optionally a company and a
// deal (docs/architecture.md). Every input is checked, the ids it names
// included, before the first step. Each step is an idempotent call keyed
// by the lead, and progress is saved after each step, so a failure
// part-way (503/504/502) leaves the lead unqualified and a retry with the
// same parameters finishes without duplicates; a retry with other
// parameters is a 409 qualification_pending.
//
// Every record it creates or changes (the company, contact and deal, by
// the calls to contacts and deals, and the lead's own status) is recorded
// in their history as the caller's, via qualification. A retry is a new
// request: its caller is the actor of what that attempt creates.
func (s *Service) Qualify(ctx context.Context, id int64, in QualifyInput) (Qualified, error) {
	ctx = history.WithVia(ctx, historyapi.ViaQualification)
	l, err := s.store.Get(ctx, id)
	if err != nil {
		return Qualified{}, err
	}
	if l.Status == StatusQualified {
		return Qualified{}, AlreadyQualified(l)
	}
	if err := in.validate(l); err != nil {
		return Qualified{}, err
	}
	saga, err := s.store.BeginQualification(ctx, id, s.lease)
	if err != nil {
		return Qualified{}, err
	}
	finished := false
	defer func() {
		if !finished {
			// Keeps the progress of this attempt (ids obtained, bodies
			// pending) and frees the lease for the retry.
			_ = s.store.ReleaseQualification(context.WithoutCancel(ctx), id, saga)
		}
	}()
	if saga.started() && saga.Input != nil && !saga.Input.same(in) {
		return Qualified{}, QualificationPending(*saga.Input)
	}
	if err := s.checkReferences(ctx, in, saga); err != nil {
		return Qualified{}, err
	}
	saga.Input = &in
	// Progress must survive a client that hangs up mid-way.
	save := func() error { return s.store.SaveQualification(context.WithoutCancel(ctx), id, saga) }

	// Company first, so the contact is created linked to it.
	if saga.Company.ID == nil {
		switch {
		case saga.Company.Pending != nil || (in.CreateCompany && in.CompanyID == nil):
			body := saga.Company.Pending
			if body == nil {
				if body, err = encode(contactsapi.CreateCompanyRequest{Name: strings.TrimSpace(deref(l.Company))}); err != nil {
					return Qualified{}, err
				}
			}
			err := s.step(ctx, &saga.Company, body, save, func(ctx context.Context) (int64, error) {
				return s.contacts.SendCompany(ctx, IdempotencyKey(id, "company"), body)
			})
			if err != nil {
				return Qualified{}, asQualifyFields(err, map[string]string{contactsapi.FieldCompanyName: "company"})
			}
		case in.CompanyID != nil:
			cid := *in.CompanyID
			saga.Company.ID = &cid
		}
	}

	if saga.Contact.ID == nil {
		switch {
		case saga.Contact.Pending == nil && in.ContactID != nil:
			cid := *in.ContactID
			saga.Contact.ID = &cid
		default:
			body := saga.Contact.Pending
			if body == nil {
				source := "lead"
				if l.Source != nil {
					source = *l.Source
				}
				custom, err := s.carried(ctx, l, s.contactFields, propertyapi.Contacts)
				if err != nil {
					return Qualified{}, err
				}
				body, err = encode(contactsapi.CreateContactRequest{
					FirstName: l.FirstName, LastName: l.LastName, Email: l.Email,
					Phone: l.Phone, JobTitle: l.JobTitle, CompanyID: saga.Company.ID,
					Notes: l.Notes, Tags: l.Tags, Source: source, AssignedTo: l.AssignedTo,
					CustomFields: custom,
				})
				if err != nil {
					return Qualified{}, err
				}
			}
			err := s.step(ctx, &saga.Contact, body, save, func(ctx context.Context) (int64, error) {
				return s.contacts.SendContact(ctx, IdempotencyKey(id, "contact"), body)
			})
			if err != nil {
				return Qualified{}, err
			}
		}
	}

	if saga.Deal.ID == nil && (saga.Deal.Pending != nil || in.CreateDeal) {
		body := saga.Deal.Pending
		if body == nil {
			value := decimal.Zero
			if in.DealValue != nil {
				value = *in.DealValue
			}
			custom, err := s.carried(ctx, l, s.dealFields, propertyapi.Deals)
			if err != nil {
				return Qualified{}, err
			}
			body, err = encode(dealsapi.CreateDealRequest{
				Title: dealTitle(l, in), Value: value.String(), StageID: in.DealStageID,
				CompanyID: saga.Company.ID, ContactID: saga.Contact.ID,
				AssignedTo: l.AssignedTo, SourceLeadID: l.ID, CustomFields: custom,
			})
			if err != nil {
				return Qualified{}, err
			}
		}
		err := s.step(ctx, &saga.Deal, body, save, func(ctx context.Context) (int64, error) {
			return s.deals.SendDeal(ctx, IdempotencyKey(id, "deal"), body)
		})
		if err != nil {
			return Qualified{}, asQualifyFields(err, map[string]string{
				dealsapi.FieldStageID: "deal_stage_id", dealsapi.FieldValue: "deal_value", dealsapi.FieldTitle: "deal_name"})
		}
	}

	lead, err := s.store.FinishQualification(context.WithoutCancel(ctx), id, saga)
	if err != nil {
		return Qualified{}, err
	}
	finished = true
	return Qualified{Lead: lead, ContactID: saga.Contact.ID, CompanyID: saga.Company.ID, DealID: saga.Deal.ID}, nil
}

// step runs one creating call. body is the step's pending body when it
// has one (a resend), else a new one. The body is saved as pending before
// the call (together with the ids earlier steps obtained, one commit per
// step); the id it returns is saved with the next step, the final update
// or the release. Losing that id in a crash is harmless: the pending body
// is resent and the upstream replays the same record.
//
// A refusal clears the pending body, so the client can correct its
// request, only when nothing can have been created: a new body refused
// with a 4xx other than idempotency_key_reused. A resend keeps its body
// whatever the answer: an earlier call with it may have created the
// record (the answer was lost), and the upstream validates a body before
// it looks up the key, so a 4xx now (the contact was deleted meanwhile,
// say) does not say nothing exists. idempotency_key_reused says a record
// exists under the key. Any other failure keeps the body for the retry.
func (s *Service) step(ctx context.Context, st *Step, body json.RawMessage, save func() error, call func(context.Context) (int64, error)) error {
	resend := st.Pending != nil
	st.Pending = body
	if err := save(); err != nil {
		return err
	}
	newID, err := call(ctx)
	if err != nil {
		if !resend && refusedUncreated(err) {
			st.Pending = nil
		}
		return err
	}
	st.ID, st.Pending = &newID, nil
	return nil
}

// refusedUncreated tells a refusal after which the upstream holds nothing
// under the key for a body sent for the first time: any 4xx but
// idempotency_key_reused, which says a record exists under the key.
func refusedUncreated(err error) bool {
	var f *fault.Error
	return errors.As(err, &f) && refusal(f.Kind) && f.Code != "idempotency_key_reused"
}

// refusal tells the kinds of a provider's refusal of the request itself
// (the 4xx a contract client passes on): malformed, invalid, not found or
// conflicting. Anything else (down, slow, broken) may succeed on a retry.
func refusal(k fault.Kind) bool {
	switch k {
	case fault.KindMalformed, fault.KindInvalid, fault.KindNotFound, fault.KindConflict:
		return true
	}
	return false
}

// carried is the lead's custom field values that object (whose
// definitions fields reads) takes: each held value of a field defined
// there with the same name and type, when that definition accepts it (an
// enum option it lacks is left behind rather than failing the
// qualification). It is read when a step's body is first built; a resend
// sends the saved body, so a retried step carries the same values.
func (s *Service) carried(ctx context.Context, l Lead, fields Fields, object string) (map[string]json.RawMessage, error) {
	held := 0
	for _, v := range l.CustomFields {
		if v != nil {
			held++
		}
	}
	if held == 0 {
		return nil, nil
	}
	own, err := s.store.Definitions(ctx)
	if err != nil {
		return nil, err
	}
	theirs, err := fields.List(ctx, object)
	if err != nil {
		return nil, err
	}
	types := make(map[string]string, len(own))
	for _, d := range own {
		types[d.Name] = d.Type
	}
	// The users a lead names are the installation's, already checked.
	anyUser := func(context.Context, int64) (bool, error) { return true, nil }
	var out map[string]json.RawMessage
	for _, d := range theirs {
		v := l.CustomFields[d.Name]
		if v == nil || types[d.Name] != d.Type {
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("leads: encode custom field %s: %w", d.Name, err)
		}
		in := customfield.Input{d.Name: raw}
		if _, err := customfield.Check(ctx, []customfield.Definition{d}, nil, in, anyUser); err != nil {
			continue
		}
		if out == nil {
			out = map[string]json.RawMessage{}
		}
		out[d.Name] = raw
	}
	return out, nil
}

func dealTitle(l Lead, in QualifyInput) string {
	if in.DealName != nil && strings.TrimSpace(*in.DealName) != "" {
		return strings.TrimSpace(*in.DealName)
	}
	if c := strings.TrimSpace(deref(l.Company)); c != "" {
		return c + " deal"
	}
	return l.FirstName + " " + l.LastName + " deal"
}

// asQualifyFields names the fields of a provider's refusal as this API
// does: names maps the contract's field constants (contactsapi.Field*,
// dealsapi.Field*) to the qualify request's fields they come from. Inputs
// are checked before the first step, so this answers only a refusal the
// checks could not foresee (a stage deleted meanwhile).
func asQualifyFields(err error, names map[string]string) error {
	var f *fault.Error
	if !errors.As(err, &f) || len(f.Fields) == 0 {
		return err
	}
	c := *f
	c.Fields = make([]fault.Field, len(f.Fields))
	for i, fe := range f.Fields {
		if n, ok := names[fe.Field]; ok {
			fe.Field = n
		}
		c.Fields[i] = fe
	}
	return &c
}

func encode(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("leads: encode step body: %w", err)
	}
	return b, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
