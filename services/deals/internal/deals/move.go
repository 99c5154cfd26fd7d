package deals

import (
	"context"
	"errors"
	"time"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/mergeapi"
)

// Move is a merge's move in deals: the deals whose contact (Object
// mergeapi.Contact) or company (mergeapi.Company) is one of Merged point
// at Into. A company move also copies the survivor's name and version
// into the moved deals' denormalised company_name when contacts answered
// with them (CompanyName nil keeps the names the deals hold).
type Move struct {
	Object           string
	Into             int64
	Merged           []int64
	CompanyName      *string
	CompanyUpdatedAt *time.Time
}

// Mover is what storage does for a merge.
type Mover interface {
	// MoveDeals repoints the deals of m and publishes deal.updated for
	// each, in one transaction; it answers how many moved (none on a
	// repeat, which finds nothing left to move).
	MoveDeals(ctx context.Context, m Move) (int64, error)
}

// Move answers contacts' merge: it moves the deals of the merged contacts
// or companies to the survivor (mergeapi.RouteMove, the body already
// checked by mergehttp) and counts them as {"deals": n}. For a company
// the survivor's name is read from contacts first, so the moved deals
// show it at once; a survivor contacts does not know keeps the names as
// they are, and contacts being down fails the move (the merge retries it).
func (s *Service) Move(ctx context.Context, m mergeapi.Move) (mergeapi.Moved, error) {
	mv := Move{Object: m.Object, Into: m.Into, Merged: m.Merged}
	if m.Object == mergeapi.Company {
		c, err := s.company(ctx, m.Into)
		switch {
		case errors.Is(err, contactsapi.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			mv.CompanyName, mv.CompanyUpdatedAt = &c.Name, c.UpdatedAt
		}
	}
	n, err := s.store.MoveDeals(ctx, mv)
	if err != nil {
		return nil, err
	}
	return mergeapi.Moved{"deals": n}, nil
}
