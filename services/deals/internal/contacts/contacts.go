// Package contacts reads companies and contacts from the contacts
// context's internal API (docs/architecture.md), implementing
// deals.Contacts. An id contacts does not know is deals.ErrRemoteNotFound;
// contacts being down stays a 503/504 problem from svcclient.
package contacts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/svcclient"
	"github.com/opencrm/crm/services/deals/internal/deals"
)

// Client is the contacts internal API client.
type Client struct{ c *svcclient.Client }

var _ deals.Contacts = (*Client)(nil)

// New returns a client of contacts at baseURL.
func New(baseURL, secret string) (*Client, error) {
	if baseURL == "" || secret == "" {
		return nil, errors.New("contacts: base URL and internal secret are required")
	}
	return &Client{c: svcclient.New("contacts", baseURL, secret)}, nil
}

func (c *Client) get(ctx context.Context, path string) (json.RawMessage, error) {
	var body struct {
		Data json.RawMessage `json:"data"`
	}
	err := c.c.Do(ctx, http.MethodGet, path, "", nil, &body)
	if err != nil {
		if problem.From(err).Status == http.StatusNotFound {
			return nil, deals.ErrRemoteNotFound
		}
		return nil, err
	}
	if len(body.Data) == 0 || string(body.Data) == "null" {
		return nil, fmt.Errorf("contacts: empty answer for %s: %w", path, problem.BadGateway("contacts answered without data"))
	}
	return body.Data, nil
}

// Company returns GET /internal/companies/{id}: its name, version
// (updated_at; nil when absent or unreadable), the record, and its primary
// contact (JSON null when it has none).
func (c *Client) Company(ctx context.Context, id int64) (deals.Company, error) {
	raw, err := c.get(ctx, "/internal/companies/"+strconv.FormatInt(id, 10))
	if err != nil {
		return deals.Company{}, err
	}
	var head struct {
		Name           string          `json:"name"`
		UpdatedAt      json.RawMessage `json:"updated_at"`
		PrimaryContact json.RawMessage `json:"primary_contact"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return deals.Company{}, fmt.Errorf("contacts: company %d: %v: %w", id, err, problem.BadGateway("contacts answered with an unreadable company"))
	}
	pc := head.PrimaryContact
	if len(pc) == 0 {
		pc = json.RawMessage("null")
	}
	return deals.Company{Name: head.Name, UpdatedAt: version(head.UpdatedAt), Raw: raw, PrimaryContact: pc}, nil
}

// version reads an RFC 3339 updated_at; anything else is no version (the
// name is still usable, it just cannot be ordered against events).
func version(raw json.RawMessage) *time.Time {
	var t time.Time
	if len(raw) == 0 || json.Unmarshal(raw, &t) != nil || t.IsZero() {
		return nil
	}
	return &t
}

// Contact returns GET /internal/contacts/{id}.
func (c *Client) Contact(ctx context.Context, id int64) (json.RawMessage, error) {
	return c.get(ctx, "/internal/contacts/"+strconv.FormatInt(id, 10))
}
