// Package upstream adapts leads' typed client (leadsapi) to intake.Leads.
package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/services/intake/internal/intake"
)

// Leads forwards submissions to the leads context in batches.
type Leads struct{ client *leadsapi.Client }

// NewLeads wraps leads' client.
func NewLeads(c *leadsapi.Client) (*Leads, error) {
	if c == nil {
		return nil, errors.New("upstream: needs a leads client")
	}
	return &Leads{client: c}, nil
}

var _ intake.Leads = (*Leads)(nil)

// CreateMany implements intake.Leads with one call for the whole batch;
// leads answers a status and body per item, as its single create would.
func (l *Leads) CreateMany(ctx context.Context, calls []intake.LeadCall) ([]intake.LeadResult, error) {
	items := make([]leadsapi.BatchItem, len(calls))
	for i, c := range calls {
		lead, err := json.Marshal(c.Fields)
		if err != nil {
			return nil, fmt.Errorf("leads: encode lead: %w", err)
		}
		items[i] = leadsapi.BatchItem{Key: c.Key, Lead: lead}
	}
	answers, errs, err := l.client.CreateBatch(ctx, items)
	if err != nil {
		return nil, err
	}
	res := make([]intake.LeadResult, len(calls))
	for i, a := range answers {
		if errs[i] != nil {
			res[i].Err = errs[i]
			continue
		}
		res[i].ID, res[i].Err = leadsapi.CreatedID(a.Body)
	}
	return res, nil
}
