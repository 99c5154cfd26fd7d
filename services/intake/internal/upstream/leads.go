// Package upstream adapts the leads context's internal API to intake.Leads.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/svcclient"
	"github.com/opencrm/crm/services/intake/internal/intake"
)

// Leads calls POST {LEADS_URL}/internal/leads.
type Leads struct{ client *svcclient.Client }

// NewLeads wraps a svcclient for the leads service.
func NewLeads(c *svcclient.Client) (*Leads, error) {
	if c == nil {
		return nil, errors.New("upstream: needs a leads client")
	}
	return &Leads{client: c}, nil
}

var _ intake.Leads = (*Leads)(nil)

// Create implements intake.Leads.
func (l *Leads) Create(ctx context.Context, idemKey string, f intake.LeadFields) (int64, error) {
	var out struct {
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	if err := l.client.Do(ctx, http.MethodPost, "/internal/leads", idemKey, f, &out); err != nil {
		return 0, err
	}
	if out.Data.ID <= 0 {
		return 0, fmt.Errorf("leads: answer without a lead id: %w", problem.BadGateway("leads answered without a lead id"))
	}
	return out.Data.ID, nil
}
