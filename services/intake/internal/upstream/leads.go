// Package upstream adapts the leads context's internal API to intake.Leads.
package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/svcclient"
	"github.com/opencrm/crm/services/intake/internal/intake"
)

// Leads calls POST {LEADS_URL}/internal/leads/batch.
type Leads struct{ client *svcclient.Client }

// NewLeads wraps a svcclient for the leads service.
func NewLeads(c *svcclient.Client) (*Leads, error) {
	if c == nil {
		return nil, errors.New("upstream: needs a leads client")
	}
	return &Leads{client: c}, nil
}

var _ intake.Leads = (*Leads)(nil)

type batchItem struct {
	Key  string            `json:"key"`
	Lead intake.LeadFields `json:"lead"`
}

// created is the part of leads' 201 body intake needs.
type created struct {
	Data struct {
		ID int64 `json:"id"`
	} `json:"data"`
}

// CreateMany implements intake.Leads with one call for the whole batch;
// leads answers a status and body per item, as its single create would.
func (l *Leads) CreateMany(ctx context.Context, calls []intake.LeadCall) ([]intake.LeadResult, error) {
	items := make([]batchItem, len(calls))
	for i, c := range calls {
		items[i] = batchItem{Key: c.Key, Lead: c.Fields}
	}
	var out struct {
		Data []struct {
			Status int             `json:"status"`
			Body   json.RawMessage `json:"body"`
		} `json:"data"`
	}
	if err := l.client.Do(ctx, http.MethodPost, "/internal/leads/batch", "", map[string]any{"items": items}, &out); err != nil {
		return nil, err
	}
	if len(out.Data) != len(calls) {
		return nil, fmt.Errorf("leads: %d answers for %d leads: %w", len(out.Data), len(calls),
			problem.BadGateway("leads answered a batch with the wrong number of items"))
	}
	res := make([]intake.LeadResult, len(calls))
	for i, a := range out.Data {
		if a.Status != http.StatusCreated {
			res[i].Err = l.client.StatusError(a.Status, a.Body)
			continue
		}
		var c created
		if err := json.Unmarshal(a.Body, &c); err != nil || c.Data.ID <= 0 {
			res[i].Err = fmt.Errorf("leads: answer without a lead id: %w", problem.BadGateway("leads answered without a lead id"))
			continue
		}
		res[i].ID = c.Data.ID
	}
	return res, nil
}
