package leads

import (
	"context"

	"github.com/opencrm/crm/pkg/contract/mergeapi"
)

// Mover is what storage does for a merge.
type Mover interface {
	// MoveLeads points the leads whose contact_id (object
	// mergeapi.Contact) or company_id (mergeapi.Company) is one of merged
	// at into and publishes lead.updated for each, in one transaction; it
	// answers how many moved (none on a repeat, which finds nothing left).
	MoveLeads(ctx context.Context, object string, into int64, merged []int64) (int64, error)
}

// Move answers contacts' merge (mergeapi.RouteMove, the body already
// checked by mergehttp): the leads qualified into a merged contact or
// company point at the survivor, counted as {"leads": n}.
func (s *Service) Move(ctx context.Context, m mergeapi.Move) (mergeapi.Moved, error) {
	n, err := s.store.MoveLeads(ctx, m.Object, m.Into, m.Merged)
	if err != nil {
		return nil, err
	}
	return mergeapi.Moved{"leads": n}, nil
}
