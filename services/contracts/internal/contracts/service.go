package contracts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/listq"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/validate"
)

// Service holds the contracts context's use cases.
type Service struct {
	store     Store
	deals     Deals
	renderer  Renderer
	catalogue *Catalogue
	sanitizer *Sanitizer
	now       func() time.Time
}

// Deps wires a Service.
type Deps struct {
	Store    Store
	Deals    Deals
	Renderer Renderer
	// Now is the clock (tests pin it); time.Now when nil.
	Now func() time.Time
}

// NewService checks its dependencies.
func NewService(d Deps) (*Service, error) {
	if d.Store == nil || d.Deals == nil || d.Renderer == nil {
		return nil, errors.New("contracts: store, deals and renderer are required")
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Service{store: d.Store, deals: d.Deals, renderer: d.Renderer,
		catalogue: DefaultCatalogue(), sanitizer: NewSanitizer(), now: d.Now}, nil
}

// Catalogue returns the merge-tag catalogue.
func (s *Service) Catalogue() *Catalogue { return s.catalogue }

func (s *Service) today() time.Time { return Day(s.now()) }

// ContractInput is a contract body. deal_id, template_id and
// title are required on create and update; the optional fields follow the
// PUT rule (absent keeps, null or "" clears). status and term_months are
// extensions: status changes go through PUT, and term_months
// overrides the template's default term.
type ContractInput struct {
	DealID     patch.Field[int64]  `json:"deal_id"`
	TemplateID patch.Field[int64]  `json:"template_id"`
	Title      patch.Field[string] `json:"title"`
	StartDate  patch.Field[string] `json:"start_date"`
	EndDate    patch.Field[string] `json:"end_date"`
	AutoRenew  patch.Field[bool]   `json:"auto_renew"`
	PartnerRef patch.Field[string] `json:"partner_ref"`
	Content    patch.Field[string] `json:"content"`
	TermMonths patch.Field[int]    `json:"term_months"`
	Status     patch.Field[string] `json:"status"`
}

// checked is a ContractInput after field validation.
type checked struct {
	dealID, templateID int64
	title              string
	start, end         *time.Time
	content            *string
}

// check validates the fields that need no lookup; every problem at once.
func (s *Service) check(in ContractInput, v *validate.Errors) checked {
	var c checked
	if !in.DealID.Set || in.DealID.Null {
		v.Add("deal_id", "is required")
	} else if v.Positive("deal_id", in.DealID.Value) {
		c.dealID = in.DealID.Value
	}
	if !in.TemplateID.Set || in.TemplateID.Null {
		v.Add("template_id", "is required")
	} else if v.Positive("template_id", in.TemplateID.Value) {
		c.templateID = in.TemplateID.Value
	}
	c.title = strings.TrimSpace(in.Title.Value)
	if v.Required("title", c.title) {
		v.MaxLen("title", c.title, validate.MaxString)
	}
	if in.StartDate.Set {
		c.start = v.Date("start_date", strings.TrimSpace(in.StartDate.Value))
	}
	if in.EndDate.Set {
		c.end = v.Date("end_date", strings.TrimSpace(in.EndDate.Value))
	}
	if in.PartnerRef.Set {
		v.MaxLen("partner_ref", in.PartnerRef.Value, validate.MaxString)
	}
	if in.TermMonths.Set && !in.TermMonths.Null && (in.TermMonths.Value < 1 || in.TermMonths.Value > MaxTermMonths) {
		v.Add("term_months", "must be an integer between 1 and %d", MaxTermMonths)
	}
	if in.Status.Set && !in.Status.Null && in.Status.Value != "" {
		v.OneOf("status", in.Status.Value, Statuses...)
	}
	if in.Content.Set && !in.Content.Null && in.Content.Value != "" {
		if v.MaxLen("content", in.Content.Value, validate.MaxContent) {
			if msg := CheckLengths(in.Content.Value); msg != "" {
				v.Add("content", "%s", msg)
			}
			clean := s.sanitizer.HTML(in.Content.Value)
			for _, fe := range s.catalogue.Check("content", clean, false) {
				v.Add(fe.Field, "%s", fe.Message)
			}
			c.content = &clean
		}
	} else if in.Content.Set {
		empty := ""
		c.content = &empty
	}
	return c
}

// lookup reads the template and the deal, reporting a missing one as a
// 422 on its field. A deals outage is returned as is (503/504).
func (s *Service) lookup(ctx context.Context, templateID, dealID int64, v *validate.Errors) (Template, MergeData, error) {
	var tpl Template
	var md MergeData
	if templateID > 0 {
		t, err := s.store.GetTemplate(ctx, templateID)
		switch {
		case errors.Is(err, problem.NotFound("")):
			v.Add("template_id", "does not exist")
		case err != nil:
			return tpl, md, err
		default:
			tpl = t
		}
	}
	if dealID > 0 {
		m, err := s.deals.Merge(ctx, dealID)
		switch {
		case errors.Is(err, ErrDealNotFound):
			v.Add("deal_id", "does not exist")
		case err != nil:
			return tpl, md, err
		default:
			md = m
		}
	}
	return tpl, md, v.Err()
}

// generate rebuilds the content, unresolved tags and denormalised deal
// fields of c from source HTML (already sanitised) and the merge data, and
// the header and footer cells from tpl when it is given (c keeps its cells
// when tpl is nil).
func (s *Service) generate(c *Contract, tpl *Template, md MergeData, source string) {
	vals := s.values(c, md)
	var r Resolution
	c.Content = s.catalogue.ResolveHTML(source, vals, &r)
	if tpl != nil {
		s.resolveCells(c, *tpl, vals, &r)
	}
	c.UnresolvedTags = r.Unresolved()
	s.denormalise(c, md)
}

// values is what a resolution of c against md reads.
func (s *Service) values(c *Contract, md MergeData) *Values {
	return &Values{Merge: md, Contract: ContractValues{
		Number: c.ContractNumber, Title: c.Title,
		StartDate: deref(c.StartDate), EndDate: deref(c.EndDate),
		EffectiveDate: c.EffectiveDate, TerminationDate: c.TerminationDate,
		TermMonths: c.TermMonths, AutoRenew: c.AutoRenew, PartnerRef: deref(c.PartnerRef),
		Today: FormatDate(s.today()),
	}}
}

// resolveCells resolves the template's header and footer cells into c.
func (s *Service) resolveCells(c *Contract, tpl Template, vals *Values, r *Resolution) {
	for i, cell := range tpl.Header() {
		c.Header[i] = s.catalogue.ResolveText(cell, vals, r)
	}
	for i, cell := range tpl.Footer() {
		c.Footer[i] = s.catalogue.ResolveText(cell, vals, r)
	}
}

func (s *Service) denormalise(c *Contract, md MergeData) {
	c.DealTitle = strings.TrimSpace(md.Deal.Title)
	c.CompanyID, c.CompanyName = nil, nil
	if md.Company != nil {
		id, name := md.Company.ID, md.Company.Name
		c.CompanyID, c.CompanyName = &id, &name
	} else if md.Deal.CompanyID != nil {
		id := *md.Deal.CompanyID
		c.CompanyID = &id
		c.CompanyName = md.Deal.CompanyName
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func datePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := FormatDate(*t)
	return &s
}

// computeDates sets effective_date and termination_date from the entered
// dates: effective = start_date, else the day the contract was created;
// termination = end_date, else effective + term_months.
func computeDates(c *Contract, created time.Time) error {
	eff := Day(created)
	if c.StartDate != nil {
		t, err := ParseDate(*c.StartDate)
		if err != nil {
			return err
		}
		eff = t
	}
	term := AddMonths(eff, c.TermMonths)
	if c.EndDate != nil {
		t, err := ParseDate(*c.EndDate)
		if err != nil {
			return err
		}
		term = t
	}
	if term.Year() > 9999 {
		// Dates are YYYY-MM-DD everywhere; a start near the end of the
		// calendar plus the term would not fit.
		return problem.Invalid("term_months", "the term would end after 9999-12-31")
	}
	c.EffectiveDate, c.TerminationDate = FormatDate(eff), FormatDate(term)
	return nil
}

func checkDateOrder(c *Contract, v *validate.Errors) {
	if c.StartDate != nil && c.EndDate != nil && *c.EndDate < *c.StartDate {
		v.Add("end_date", "must not be before start_date")
	}
}

// CreateContract generates a draft contract for a deal from a template.
func (s *Service) CreateContract(ctx context.Context, in ContractInput, createdBy *int64) (Contract, error) {
	var v validate.Errors
	ck := s.check(in, &v)
	if in.Status.Set && in.Status.Value != "" && in.Status.Value != string(Draft) {
		v.Add("status", "a new contract starts as draft")
	}
	c := Contract{Title: ck.title, DealID: ck.dealID, TemplateID: ck.templateID, Status: Draft,
		StartDate: datePtr(ck.start), EndDate: datePtr(ck.end), AutoRenew: in.AutoRenew.Value,
		CreatedBy: createdBy}
	c.Name = c.Title
	if p := strings.TrimSpace(in.PartnerRef.Value); p != "" {
		c.PartnerRef = &p
	}
	checkDateOrder(&c, &v)
	if err := v.Err(); err != nil {
		return Contract{}, err
	}
	tpl, md, err := s.lookup(ctx, ck.templateID, ck.dealID, &v)
	if err != nil {
		return Contract{}, err
	}
	c.TermMonths = tpl.DefaultTermMonths
	if in.TermMonths.Set && !in.TermMonths.Null {
		c.TermMonths = in.TermMonths.Value
	}
	now := s.now()
	if err := computeDates(&c, now); err != nil {
		return Contract{}, err
	}
	source := tpl.Content
	if ck.content != nil && *ck.content != "" {
		source = *ck.content
	}
	return s.store.CreateContract(ctx, c, tpl.NumberPrefix, now.UTC().Year(), func(c *Contract) error {
		s.generate(c, &tpl, md, source)
		return nil
	})
}

// GetContract returns one contract.
func (s *Service) GetContract(ctx context.Context, id int64) (Contract, error) {
	return s.store.GetContract(ctx, id)
}

// ContractExists answers 404 for a missing contract (notes and tasks).
func (s *Service) ContractExists(ctx context.Context, id int64) error {
	return s.store.ContractExists(ctx, id)
}

// ContractOwner says who may change a contract.
func (s *Service) ContractOwner(ctx context.Context, id int64) (directory.Owner, error) {
	return s.store.ContractOwner(ctx, id)
}

// CanWrite answers 403 unless the caller may change a record owned by o.
func (s *Service) CanWrite(ctx context.Context, o directory.Owner) error {
	return s.store.CanWrite(ctx, o)
}

// ContractWritable answers 403 unless the caller may change the contract
// (its notes and tasks follow it), 404 when it does not exist.
func (s *Service) ContractWritable(ctx context.Context, id int64) error {
	o, err := s.store.ContractOwner(ctx, id)
	if err != nil {
		return err
	}
	return s.store.CanWrite(ctx, o)
}

// ListContracts returns one page of contracts.
func (s *Service) ListContracts(ctx context.Context, f ListFilter, q *listq.Query) ([]Contract, int, error) {
	f.Today = s.today()
	return s.store.ListContracts(ctx, f, q)
}

// DeleteContract removes a contract with its notes and tasks. A contract
// with a signed copy is not deleted (409): the copy goes first, through the
// admin-only DELETE /contracts/{id}/executed, so no user destroys a signed
// copy by deleting its contract. The store decides on the locked contract,
// in the deleting transaction.
func (s *Service) DeleteContract(ctx context.Context, id int64) error {
	return s.store.DeleteContract(ctx, id, func(hasSignedCopy bool) error {
		if hasSignedCopy {
			return problem.Conflict("conflict", "this contract has a signed copy; an admin deletes it (DELETE /contracts/{id}/executed) before the contract can be deleted")
		}
		return nil
	})
}

func invalidTransition(from, to Status) error {
	return problem.Conflict("invalid_transition", fmt.Sprintf("a contract cannot move from %s to %s", from, to))
}

func frozen(st Status) error {
	return problem.Conflict("conflict", fmt.Sprintf("the content of a %s contract is frozen", st))
}

// UpdateContract applies a PUT. Changing deal_id or template_id rebuilds
// the content from the new sources unless content is given; given content
// is sanitised and its tags resolved against the deal. Status changes
// follow the transition table. Content of an executed, terminated or
// archived contract cannot change (409).
func (s *Service) UpdateContract(ctx context.Context, id int64, in ContractInput) (Contract, error) {
	var v validate.Errors
	ck := s.check(in, &v)
	if err := v.Err(); err != nil {
		return Contract{}, err
	}
	cur, err := s.store.GetContract(ctx, id)
	if err != nil {
		return Contract{}, err
	}
	dealChanged := ck.dealID != cur.DealID
	tplChanged := ck.templateID != cur.TemplateID
	contentChanged := ck.content != nil && *ck.content != cur.Content
	if (dealChanged || tplChanged || contentChanged) && cur.Status.Frozen() {
		return Contract{}, frozen(cur.Status)
	}
	var tpl Template
	var md MergeData
	needDeal := dealChanged || tplChanged || (contentChanged && tagPattern.MatchString(*ck.content))
	if needDeal {
		tplID := int64(0)
		if dealChanged || tplChanged {
			tplID = ck.templateID
		}
		tpl, md, err = s.lookup(ctx, tplID, ck.dealID, &v)
		if err != nil {
			return Contract{}, err
		}
	}
	// term_months: null goes back to the default of the contract's
	// template (the new one when template_id changes), as on create.
	defaultTerm := 0
	if in.TermMonths.Set && in.TermMonths.Null {
		if tplChanged {
			defaultTerm = tpl.DefaultTermMonths
		} else {
			t, err := s.store.GetTemplate(ctx, cur.TemplateID)
			if err != nil {
				return Contract{}, err
			}
			defaultTerm = t.DefaultTermMonths
		}
	}
	return s.store.UpdateContract(ctx, id, func(c *Contract) error {
		if c.DealID != cur.DealID || c.TemplateID != cur.TemplateID {
			return problem.Conflict("conflict", "the contract was changed concurrently; retry")
		}
		var v validate.Errors
		c.Title, c.Name = ck.title, ck.title
		datesChanged := false
		if in.StartDate.Set {
			c.StartDate, datesChanged = datePtr(ck.start), true
		}
		if in.EndDate.Set {
			c.EndDate, datesChanged = datePtr(ck.end), true
		}
		if in.TermMonths.Set {
			if in.TermMonths.Null {
				c.TermMonths = defaultTerm
			} else {
				c.TermMonths = in.TermMonths.Value
			}
			datesChanged = true
		}
		if in.AutoRenew.Set {
			c.AutoRenew = in.AutoRenew.Value
		}
		if in.PartnerRef.Set {
			c.PartnerRef = nil
			if p := strings.TrimSpace(in.PartnerRef.Value); p != "" {
				c.PartnerRef = &p
			}
		}
		checkDateOrder(c, &v)
		if err := v.Err(); err != nil {
			return err
		}
		if datesChanged {
			if err := computeDates(c, c.CreatedAt.Time); err != nil {
				return err
			}
		}
		if (dealChanged || tplChanged || contentChanged) && c.Status.Frozen() {
			return frozen(c.Status)
		}
		if tplChanged {
			c.TemplateID, c.TemplateName = tpl.ID, tpl.Name
		}
		c.DealID = ck.dealID
		switch {
		case contentChanged && needDeal:
			s.generate(c, nil, md, *ck.content)
			if dealChanged || tplChanged {
				// unresolved_tags keeps listing the sent content's tags only.
				s.resolveCells(c, tpl, s.values(c, md), &Resolution{})
			}
		case contentChanged:
			c.Content, c.UnresolvedTags = *ck.content, []string{}
		case dealChanged || tplChanged:
			s.generate(c, &tpl, md, tpl.Content)
		}
		if in.Status.Set && in.Status.Value != "" && Status(in.Status.Value) != c.Status {
			to := Status(in.Status.Value)
			if !CanTransition(c.Status, to) {
				return invalidTransition(c.Status, to)
			}
			if c.Status == Expired && to == Active {
				s.reactivate(c)
			}
			c.Status = to
		}
		return nil
	})
}

// reactivate is a manual renewal of an expired contract: a termination
// date in the past moves forward by whole terms, so the daily job does not
// expire it again the next morning.
func (s *Service) reactivate(c *Contract) {
	term, err := ParseDate(c.TerminationDate)
	if err != nil {
		return
	}
	anchor, err := RenewalAnchor(c.EndDate, c.EffectiveDate)
	if err != nil {
		return
	}
	if next, k := RenewedTermination(anchor, term, c.TermMonths, s.today()); k > 0 {
		c.TerminationDate = FormatDate(next)
	}
}

// Regenerate re-reads the deal and the template and rebuilds the content,
// header, footer and unresolved_tags.
func (s *Service) Regenerate(ctx context.Context, id int64) (Contract, error) {
	cur, err := s.store.GetContract(ctx, id)
	if err != nil {
		return Contract{}, err
	}
	if cur.Status.Frozen() {
		return Contract{}, frozen(cur.Status)
	}
	tpl, err := s.store.GetTemplate(ctx, cur.TemplateID)
	if err != nil {
		return Contract{}, err
	}
	md, err := s.deals.Merge(ctx, cur.DealID)
	if errors.Is(err, ErrDealNotFound) {
		return Contract{}, problem.Invalid("deal_id", "the contract's deal no longer exists")
	}
	if err != nil {
		return Contract{}, err
	}
	return s.store.UpdateContract(ctx, id, func(c *Contract) error {
		if c.Status.Frozen() {
			return frozen(c.Status)
		}
		if c.DealID != cur.DealID || c.TemplateID != cur.TemplateID {
			return problem.Conflict("conflict", "the contract was changed concurrently; retry")
		}
		c.TemplateName = tpl.Name
		s.generate(c, &tpl, md, tpl.Content)
		return nil
	})
}

// RunExpiry expires or renews every active or executed contract whose
// termination date is before today, in batches, each change with a system
// note. Concurrent runs (several replicas) never process a contract twice.
func (s *Service) RunExpiry(ctx context.Context, today time.Time) (ExpiryResult, error) {
	return s.store.ExpireAndRenew(ctx, Day(today), 200)
}
