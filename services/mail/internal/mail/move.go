package mail

import (
	"context"

	"github.com/opencrm/crm/pkg/contract/mergeapi"
)

// Move answers contacts' merge (mergeapi.RouteMove, the body already
// checked by mergehttp). Mail stores no link from a message to a contact:
// a contact's messages are those one of whose participants has its
// address. So a merge gives the survivor the addresses it no longer has
// (the merged contacts', its own former one: Move's emails) as aliases,
// and the merged contacts' aliases; the answer counts the aliases added
// (a repeat adds none). Companies carry no address ({}).
func (s *Service) Move(ctx context.Context, m mergeapi.Move) (mergeapi.Moved, error) {
	if m.Object != mergeapi.Contact {
		return mergeapi.Moved{}, nil
	}
	addresses := make([]string, 0, len(m.Emails))
	for _, e := range m.Emails {
		if a := normAddress(e); a != "" {
			addresses = append(addresses, a)
		}
	}
	n, err := s.store.AddAliases(ctx, m.Into, m.Merged, addresses)
	if err != nil {
		return nil, err
	}
	return mergeapi.Moved{"email_links": n}, nil
}
