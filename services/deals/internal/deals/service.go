package deals

import (
	"context"
	"errors"

	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/directory"
)

// Service applies the deals rules on top of a Store and the contacts client.
type Service struct {
	store    Store
	contacts Contacts
	leads    Leads
}

// NewService wires the context's logic.
func NewService(store Store, contacts Contacts, leads Leads) (*Service, error) {
	if store == nil || contacts == nil || leads == nil {
		return nil, errors.New("deals: service needs a store, a contacts client and a leads client")
	}
	return &Service{store: store, contacts: contacts, leads: leads}, nil
}

// DealOwner says who may change a deal (its quotes follow it).
func (s *Service) DealOwner(ctx context.Context, id int64) (directory.Owner, error) {
	return s.store.DealOwner(ctx, id)
}

// QuoteOwner says who may change a quote: its deal's owner.
func (s *Service) QuoteOwner(ctx context.Context, id int64) (directory.Owner, error) {
	return s.store.QuoteOwner(ctx, id)
}

// CanWrite refuses (forbidden) unless the caller may change a record owned by o.
func (s *Service) CanWrite(ctx context.Context, o directory.Owner) error {
	return s.store.CanWrite(ctx, o)
}

// Definitions lists the installation's custom fields of deals (a list's
// cf[...] filters are read against them).
func (s *Service) Definitions(ctx context.Context) ([]customfield.Definition, error) {
	return s.store.Definitions(ctx)
}
