package leadsapi

import (
	"context"
	"net/http"
	"net/url"
)

// The duplicate lookup of an e-mail address (intake asks it for each
// public submission, to tell the submitter which record it repeats).
const (
	PathDuplicates = PathLeads + "/duplicates"
	// RouteDuplicates answers GET ?email=: 200 {"data": DuplicateOf}, or
	// {"data": null} when no contact and no lead has the address; 422 on
	// email for a blank or overlong address.
	RouteDuplicates = "GET " + PathDuplicates
)

// DuplicateOf names the existing record an address already belongs to,
// compared case-insensitively: the oldest contact with it (ContactID),
// else the oldest lead (LeadID). Exactly one is set.
type DuplicateOf struct {
	ContactID int64 `json:"contact_id,omitempty"`
	LeadID    int64 `json:"lead_id,omitempty"`
}

// DuplicateOf asks leads (which asks contacts) for the record email
// already belongs to; nil when none.
func (c *Client) DuplicateOf(ctx context.Context, email string) (*DuplicateOf, error) {
	var out struct {
		Data *DuplicateOf `json:"data"`
	}
	if err := c.c.Do(ctx, http.MethodGet, PathDuplicates+"?"+url.Values{"email": {email}}.Encode(), "", nil, &out); err != nil {
		return nil, err
	}
	return out.Data, nil
}
