package contracts

import (
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/validate"
)

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
	for i, cell := range headerCells(tpl) {
		c.Header[i] = s.catalogue.ResolveText(cell, vals, r)
	}
	for i, cell := range footerCells(tpl) {
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
		return fault.Invalid("term_months", "the term would end after 9999-12-31")
	}
	c.EffectiveDate, c.TerminationDate = FormatDate(eff), FormatDate(term)
	return nil
}

func checkDateOrder(c *Contract, v *validate.Errors) {
	if c.StartDate != nil && c.EndDate != nil && *c.EndDate < *c.StartDate {
		v.Add("end_date", "must not be before start_date")
	}
}
