package contracts

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/contract/contractsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
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

// ContractInput is a contract body: deal_id, template_id and title are
// required on create and update, the optional fields follow the PUT rule.
type ContractInput = contractsapi.ContractInput

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
	// An absent or null id decodes as 0: it is missing, not negative.
	if in.DealID == 0 {
		v.Add("deal_id", "is required")
	} else if v.Positive("deal_id", in.DealID) {
		c.dealID = in.DealID
	}
	if in.TemplateID == 0 {
		v.Add("template_id", "is required")
	} else if v.Positive("template_id", in.TemplateID) {
		c.templateID = in.TemplateID
	}
	c.title = strings.TrimSpace(in.Title)
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
		case errors.Is(err, fault.NotFound("")):
			v.Add("template_id", "does not exist")
		case err != nil:
			return tpl, md, err
		default:
			tpl = t
		}
	}
	if dealID > 0 {
		m, err := s.mergeData(ctx, dealID)
		switch {
		case errors.Is(err, dealsapi.ErrNotFound):
			v.Add("deal_id", "does not exist")
		case err != nil:
			return tpl, md, err
		default:
			md = m
		}
	}
	return tpl, md, v.Err()
}

// mergeData reads deal dealID's merge data into contracts' own tolerant
// projection, so deals can add fields freely; an answer without the
// deal's id stands for dealID. An unknown deal is dealsapi.ErrNotFound,
// an outage the client's error (503/504).
func (s *Service) mergeData(ctx context.Context, dealID int64) (MergeData, error) {
	var md MergeData
	if err := s.deals.Merge(ctx, dealID, &md); err != nil {
		return MergeData{}, err
	}
	if md.Deal.ID == 0 {
		md.Deal.ID = dealID
	}
	return md, nil
}

// CreateContract generates a draft contract for a deal from a template.
func (s *Service) CreateContract(ctx context.Context, in ContractInput, createdBy *int64) (Contract, error) {
	var v validate.Errors
	ck := s.check(in, &v)
	if in.Status.Set && in.Status.Value != "" && in.Status.Value != string(Draft) {
		v.Add("status", "a new contract starts as draft")
	}
	c := Contract{Contract: contractsapi.Contract{Title: ck.title, DealID: ck.dealID, TemplateID: ck.templateID,
		Status: Draft, StartDate: datePtr(ck.start), EndDate: datePtr(ck.end), AutoRenew: in.AutoRenew.Value,
		CreatedBy: createdBy}}
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

// ListContracts returns one page of contracts and their total.
func (s *Service) ListContracts(ctx context.Context, f ListFilter) ([]Contract, int, error) {
	f.Today = s.today()
	return s.store.ListContracts(ctx, f)
}

// DeleteContract removes a contract with its notes and tasks. A contract
// with a signed copy is not deleted (409): the copy goes first, through the
// admin-only contractsapi.DeleteExecuted, so no user destroys a signed
// copy by deleting its contract. The store decides on the locked contract,
// in the deleting transaction.
func (s *Service) DeleteContract(ctx context.Context, id int64) error {
	return s.store.DeleteContract(ctx, id, func(hasSignedCopy bool) error {
		if hasSignedCopy {
			return fault.Conflict("conflict", "this contract has a signed copy; an admin deletes it ("+
				contractsapi.DeleteExecuted.Pattern()+") before the contract can be deleted")
		}
		return nil
	})
}
