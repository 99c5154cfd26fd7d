package leads

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/validate"
)

// Matcher finds leads by address.
type Matcher interface {
	// LeadByEmail is the oldest lead whose email equals email ignoring
	// case (found false when none).
	LeadByEmail(ctx context.Context, email string) (id int64, found bool, err error)
}

// DuplicateOf names the record email already belongs to: the oldest
// contact with it (asked of contacts, the record a lead becomes), else
// the oldest lead; nil when none. A blank or overlong address is a 422 on
// email; contacts failing fails the lookup (a lead match alone would hide
// the contact it may repeat).
func (s *Service) DuplicateOf(ctx context.Context, email string) (*leadsapi.DuplicateOf, error) {
	email = strings.TrimSpace(email)
	var v validate.Errors
	if v.Required("email", email) {
		v.MaxLen("email", email, validate.MaxString)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	contacts, err := s.contacts.MatchContacts(ctx, email)
	if err != nil {
		return nil, err
	}
	var oldest int64
	for _, raw := range contacts {
		var c struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(raw, &c); err != nil || c.ID <= 0 {
			return nil, fmt.Errorf("contacts: match %q: unreadable contact: %w", email,
				fault.New(fault.KindBadUpstream, "upstream_unavailable", "contacts answered with an unreadable contact"))
		}
		if oldest == 0 || c.ID < oldest {
			oldest = c.ID
		}
	}
	if oldest > 0 {
		return &leadsapi.DuplicateOf{ContactID: oldest}, nil
	}
	id, found, err := s.store.LeadByEmail(ctx, email)
	if err != nil || !found {
		return nil, err
	}
	return &leadsapi.DuplicateOf{LeadID: id}, nil
}
