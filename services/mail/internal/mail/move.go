package mail

import (
	"context"

	"github.com/opencrm/crm/pkg/contract/mergeapi"
)

// Move answers contacts' merge (mergeapi.RouteMove, the body already
// checked by mergehttp). Mail stores no link from a message to a contact
// or a lead: a record's emails are the messages one of whose participants
// has the record's current address (Linked), read through contacts each
// time. So there is no link to repoint: the survivor's emails are those
// of the address it keeps, the merged contacts' messages under that
// address included, at once and without a write here. The answer counts
// the stored links moved, which is none ({"email_links": 0}); companies
// carry no email ({}).
func (s *Service) Move(_ context.Context, m mergeapi.Move) (mergeapi.Moved, error) {
	if m.Object != mergeapi.Contact {
		return mergeapi.Moved{}, nil
	}
	return mergeapi.Moved{"email_links": 0}, nil
}
