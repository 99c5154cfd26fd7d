package store

import (
	"context"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
)

// Definitions lists the custom fields of leads.
func (s *Store) Definitions(ctx context.Context) ([]customfield.Definition, error) {
	return customfield.Definitions(ctx, s.db, propertyapi.Leads)
}
