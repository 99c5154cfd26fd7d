package contracts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/validate"
)

func invalidTransition(from, to Status) error {
	return fault.Conflict("invalid_transition", fmt.Sprintf("a contract cannot move from %s to %s", from, to))
}

func frozenContent(st Status) error {
	return fault.Conflict("conflict", fmt.Sprintf("the content of a %s contract is frozen", st))
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
	if (dealChanged || tplChanged || contentChanged) && Frozen(cur.Status) {
		return Contract{}, frozenContent(cur.Status)
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
			return fault.Conflict("conflict", "the contract was changed concurrently; retry")
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
		if (dealChanged || tplChanged || contentChanged) && Frozen(c.Status) {
			return frozenContent(c.Status)
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
	if Frozen(cur.Status) {
		return Contract{}, frozenContent(cur.Status)
	}
	tpl, err := s.store.GetTemplate(ctx, cur.TemplateID)
	if err != nil {
		return Contract{}, err
	}
	md, err := s.mergeData(ctx, cur.DealID)
	if errors.Is(err, dealsapi.ErrNotFound) {
		return Contract{}, fault.Invalid("deal_id", "the contract's deal no longer exists")
	}
	if err != nil {
		return Contract{}, err
	}
	return s.store.UpdateContract(ctx, id, func(c *Contract) error {
		if Frozen(c.Status) {
			return frozenContent(c.Status)
		}
		if c.DealID != cur.DealID || c.TemplateID != cur.TemplateID {
			return fault.Conflict("conflict", "the contract was changed concurrently; retry")
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
