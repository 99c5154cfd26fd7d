// Package dealmerge reads a deal's merge data through dealsapi, the deals
// context's typed client, into contracts' own tolerant projection
// (contracts.MergeData), so deals can add fields freely.
package dealmerge

import (
	"context"
	"errors"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// Client implements contracts.Deals.
type Client struct{ c *dealsapi.Client }

var _ contracts.Deals = (*Client)(nil)

// New returns a client of the deals service at baseURL.
func New(baseURL, secret string) *Client {
	return &Client{c: dealsapi.New(baseURL, secret)}
}

// Merge returns the deal with its company, contact and merge quote. An id
// deals does not know is contracts.ErrDealNotFound; an outage stays a
// 503/504 problem.
func (c *Client) Merge(ctx context.Context, dealID int64) (contracts.MergeData, error) {
	var out contracts.MergeData
	err := c.c.Merge(ctx, dealID, &out)
	switch {
	case errors.Is(err, dealsapi.ErrNotFound):
		return contracts.MergeData{}, contracts.ErrDealNotFound
	case err != nil:
		return contracts.MergeData{}, err
	}
	if out.Deal.ID == 0 {
		out.Deal.ID = dealID
	}
	return out, nil
}
