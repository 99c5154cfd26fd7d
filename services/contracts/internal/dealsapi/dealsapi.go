// Package dealsapi reads deal merge data from the deals context's internal
// API (GET {DEALS_URL}/internal/deals/{id}/merge, docs/architecture.md).
package dealsapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/svcclient"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// Client implements contracts.Deals.
type Client struct {
	c *svcclient.Client
}

var _ contracts.Deals = (*Client)(nil)

// New returns a client of the deals service at baseURL.
func New(baseURL, secret string) *Client {
	return &Client{c: svcclient.New("deals", baseURL, secret)}
}

// Merge returns the deal with its company, contact and merge quote. A 404
// from deals becomes contracts.ErrDealNotFound; an outage stays a 503/504
// problem from svcclient.
func (c *Client) Merge(ctx context.Context, dealID int64) (contracts.MergeData, error) {
	var out struct {
		Data *contracts.MergeData `json:"data"`
	}
	err := c.c.Do(ctx, http.MethodGet, fmt.Sprintf("/internal/deals/%d/merge", dealID), "", nil, &out)
	var p *problem.Error
	if errors.As(err, &p) && p.Status == http.StatusNotFound {
		return contracts.MergeData{}, contracts.ErrDealNotFound
	}
	if err != nil {
		return contracts.MergeData{}, err
	}
	if out.Data == nil {
		return contracts.MergeData{}, fmt.Errorf("deals: merge answer without data: %w", problem.BadGateway("deals answered with an unreadable body"))
	}
	if out.Data.Deal.ID == 0 {
		out.Data.Deal.ID = dealID
	}
	return *out.Data, nil
}
