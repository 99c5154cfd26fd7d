// Package contacts reads companies and contacts through contactsapi, the
// contacts context's typed client, into deals' own projections,
// implementing deals.Contacts. An id contacts does not know is deals.ErrRemoteNotFound;
// contacts being down stays a 503/504 problem from svcclient.
package contacts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/services/deals/internal/deals"
)

// Client is deals' projection of contacts' typed client.
type Client struct{ c *contactsapi.Client }

var _ deals.Contacts = (*Client)(nil)

// New returns a client of contacts at baseURL.
func New(baseURL, secret string) (*Client, error) {
	if baseURL == "" || secret == "" {
		return nil, errors.New("contacts: base URL and internal secret are required")
	}
	return &Client{c: contactsapi.New(baseURL, secret)}, nil
}

// notFound maps contacts' ErrNotFound onto deals'.
func notFound(err error) error {
	if errors.Is(err, contactsapi.ErrNotFound) {
		return deals.ErrRemoteNotFound
	}
	return err
}

// Company returns the company: its name, version
// (updated_at; nil when absent or unreadable), the record, and its primary
// contact (JSON null when it has none).
func (c *Client) Company(ctx context.Context, id int64) (deals.Company, error) {
	var raw json.RawMessage
	if err := c.c.Company(ctx, id, &raw); err != nil {
		return deals.Company{}, notFound(err)
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

// Contact returns the contact record.
func (c *Client) Contact(ctx context.Context, id int64) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := c.c.Contact(ctx, id, &raw); err != nil {
		return nil, notFound(err)
	}
	return raw, nil
}
