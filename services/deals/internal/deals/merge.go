package deals

import (
	"context"
	"errors"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
)

// Merge gathers what contract merge tags need about a deal.
func (s *Service) Merge(ctx context.Context, id int64) (Merge, error) {
	d, err := s.store.GetDeal(ctx, id)
	if err != nil {
		return Merge{}, err
	}
	m := Merge{Deal: d.Public(), StageName: d.StageName, Company: null, Contact: null}
	if d.AssignedTo != nil {
		if m.OwnerName, err = s.store.UserName(ctx, *d.AssignedTo); err != nil {
			return Merge{}, err
		}
	}
	var primary []byte
	if d.CompanyID != nil {
		c, err := s.company(ctx, *d.CompanyID)
		switch {
		case errors.Is(err, contactsapi.ErrNotFound):
		case err != nil:
			return Merge{}, err
		default:
			m.Company, primary = c.Raw, c.PrimaryContact
		}
	}
	if d.ContactID != nil {
		c, err := s.contact(ctx, *d.ContactID)
		switch {
		case errors.Is(err, contactsapi.ErrNotFound):
		case err != nil:
			return Merge{}, err
		default:
			m.Contact = c
		}
	}
	if string(m.Contact) == "null" && len(primary) > 0 {
		m.Contact = primary
	}
	q, err := s.store.MergeQuote(ctx, id)
	if err != nil {
		return Merge{}, err
	}
	if q != nil {
		p := q.Public()
		m.Quote = &p
	}
	return m, nil
}

var null = []byte("null")
